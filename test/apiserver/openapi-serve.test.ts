// Serving the OpenAPI documents over HTTP: JSON (v2 also protobuf), ETags and 304s, immutable `?hash=` URLs, stale hashes redirected.
import { describe, expect, it } from "vitest";
import { call } from "./http-client.js";
import { sharedServer } from "./fixtures.js";

const shared = sharedServer();

describe("published OpenAPI documents over HTTP", () => {
  it("serves v3 documents from the index's hashed URLs as immutable, and answers If-None-Match with 304", async () => {
    const index = await call(shared.base, "GET", "/openapi/v3");
    expect([index.status, index.headers.get("cache-control")]).toEqual([200, "no-cache, private"]);
    const url: string = index.body.paths[`apis/${shared.server.names.certificates}/v1`].serverRelativeURL;
    const hash = url.split("hash=")[1]!;
    const doc = await call(shared.base, "GET", url);
    expect(doc.status).toBe(200);
    expect(doc.headers.get("content-type")).toMatch(/^application\/json/);
    expect(doc.headers.get("cache-control")).toBe("public, immutable");
    expect(doc.headers.get("etag")).toBe(`"${hash}"`);
    expect(Object.keys(doc.body.components.schemas)).toContain("io.platform.api.certificates.v1.CertificateSigningRequest");
    const again = await call(shared.base, "GET", url, { headers: { "if-none-match": `"${hash}"` } });
    expect([again.status, again.text]).toEqual([304, ""]);
    const plain = await call(shared.base, "GET", url.split("?")[0]!);
    expect([plain.status, plain.headers.get("cache-control"), plain.text]).toEqual([200, "no-cache, private", doc.text]);
  });

  it("redirects a stale hash to the current URL", async () => {
    const path = `/openapi/v3/apis/${shared.server.names.certificates}/v1`;
    const res = await fetch(`${shared.base}${path}?hash=0123`, { redirect: "manual" });
    expect(res.status).toBe(301);
    const current = (await call(shared.base, "GET", "/openapi/v3")).body.paths[path.slice("/openapi/v3/".length)].serverRelativeURL;
    expect(res.headers.get("location")).toBe(current);
  });

  it("serves v2 as JSON and as gnostic protobuf, each with its ETag, and refuses other media types with 406", async () => {
    const v2 = await call(shared.base, "GET", "/openapi/v2", { accept: "application/json" });
    expect([v2.status, v2.body.swagger, v2.headers.get("etag")]).toEqual([200, "2.0", expect.stringMatching(/^"[0-9A-F]+"$/)]);
    expect(v2.body.definitions["io.platform.api.core.v1.ServiceAccount"]["x-kubernetes-group-version-kind"]).toEqual([{ group: "", version: "v1", kind: "ServiceAccount" }]);
    const type = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    const pb = await fetch(`${shared.base}/openapi/v2`, { headers: { accept: type } });
    expect([pb.status, pb.headers.get("content-type")]).toEqual([200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"]);
    expect(pb.headers.get("etag")).not.toBe(v2.headers.get("etag"));
    const bytes = Buffer.from(await pb.arrayBuffer());
    // Document field 1 (swagger) first, then the definitions carrying the kinds' names.
    expect([...bytes.subarray(0, 5)]).toEqual([0x0a, 3, ...Buffer.from("2.0")]);
    expect(bytes.includes(Buffer.from("io.platform.api.certificates.v1.CertificateSigningRequest"))).toBe(true);
    const yaml = await call(shared.base, "GET", "/openapi/v2", { accept: "application/yaml" });
    expect([yaml.status, yaml.body.reason]).toEqual([406, "NotAcceptable"]);
  });

});
