// Response compression: bodies over 128 KiB go gzipped to clients that accept gzip, as upstream's API server sends them.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { acceptsGzip, GZIP_THRESHOLD_BYTES } from "../../../src/apiserver/http/compression.js";
import { createClient } from "../../../src/client/rest-client.js";
import { call, openWatch } from "../http-client.js";
import { sharedServer } from "../fixtures.js";

const shared = sharedServer();
const SECRETS = "/api/v1/namespaces/default/secrets";

/** A GET as bytes, with the headers given and nothing added (fetch would ask for gzip and decode it itself). */
function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpRequest(shared.base + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    })
      .on("error", reject)
      .end();
  });
}

/** `count` Secrets labelled `set=label`, each with `bytes` of base64 data. */
async function secrets(label: string, count: number, bytes: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = shared.unique("big");
    const r = await call(shared.base, "POST", SECRETS, { body: { apiVersion: "v1", kind: "Secret", metadata: { name, labels: { set: label } }, data: { blob: Buffer.alloc((bytes * 3) / 4, i).toString("base64") } } });
    expect(r.status).toBe(201);
    names.push(name);
  }
  return names;
}

describe("acceptsGzip reads Accept-Encoding as upstream's negotiateContentEncoding", () => {
  it("takes gzip as one of the comma-separated tokens, trimmed, and nothing else", () => {
    const yes = ["gzip", "gzip, deflate", "deflate,gzip", " gzip ", "br, gzip, deflate"];
    const no = ["", "GZIP", "gzip;q=0.5", "x-gzip", "deflate, br", "gzip2", "*"];
    expect(yes.map(acceptsGzip)).toEqual(yes.map(() => true));
    expect(no.map(acceptsGzip)).toEqual(no.map(() => false));
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip(["deflate", "gzip"])).toBe(true);
    const token = fc.oneof(fc.constantFrom("gzip", "deflate", "br", "identity", "gzip;q=0", "*"), fc.string({ maxLength: 6 }).filter((s) => !s.includes(",")));
    const spaced = fc.tuple(fc.constantFrom("", " ", "\t"), token, fc.constantFrom("", " ")).map(([a, t, b]) => `${a}${t}${b}`);
    fc.assert(fc.property(fc.array(spaced, { minLength: 1, maxLength: 5 }), (tokens) => acceptsGzip(tokens.join(",")) === tokens.some((t) => t.trim() === "gzip")));
  });
});

describe("responses over 128 KiB", () => {
  it("gzips a LIST for a client that accepts gzip, with Vary, and the same body once decoded", async () => {
    const label = shared.unique("set");
    const names = await secrets(label, 6, 30_000);
    const path = `${SECRETS}?labelSelector=set%3D${label}`;
    const plain = await get(path);
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.length).toBeGreaterThan(GZIP_THRESHOLD_BYTES);
    const zipped = await get(path, { "accept-encoding": "gzip, deflate" });
    expect(zipped.status).toBe(200);
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers.vary).toContain("Accept-Encoding");
    expect(Number(zipped.headers["content-length"])).toBe(zipped.body.length);
    expect(zipped.body.length).toBeLessThan(plain.body.length / 10);
    const decoded = JSON.parse(gunzipSync(zipped.body).toString("utf8"));
    expect(decoded).toEqual(JSON.parse(plain.body.toString("utf8")));
    expect(decoded.items.map((i: { metadata: { name: string } }) => i.metadata.name).sort()).toEqual([...names].sort());
    // fetch asks for gzip and decodes it: a client nobody here wrote reads the list whole.
    const viaFetch = await call(shared.base, "GET", path);
    expect(viaFetch.headers.get("content-encoding")).toBe("gzip");
    expect(viaFetch.body).toEqual(decoded);
    // So does this product's client, which asks for gzip beyond its own machine.
    const client = createClient({ server: shared.base, tls: {}, credentials: { type: "none" }, namespace: "default", qps: 0, burst: 1, userAgent: "test" });
    const listed = await client.resource({ group: "", version: "v1", plural: "secrets", namespaced: true }).list({ namespace: "default", labelSelector: `set=${label}` });
    expect(listed.items.map((i) => i.metadata.name).sort()).toEqual([...names].sort());
  });

  it("leaves it plain for a q-valued or upper-case gzip, as upstream's exact-token match does", async () => {
    const label = shared.unique("set");
    await secrets(label, 6, 30_000);
    for (const asked of ["gzip;q=1.0", "GZIP", "br"]) {
      const r = await get(`${SECRETS}?labelSelector=set%3D${label}`, { "accept-encoding": asked });
      expect(r.headers["content-encoding"], asked).toBeUndefined();
      expect(JSON.parse(r.body.toString("utf8")).items).toHaveLength(6);
    }
  });

  it("gzips one large object's GET, and not a small one's", async () => {
    const [large] = await secrets(shared.unique("set"), 1, GZIP_THRESHOLD_BYTES + 1_000);
    const [small] = await secrets(shared.unique("set"), 1, 10_000);
    const big = await get(`${SECRETS}/${large}`, { "accept-encoding": "gzip" });
    expect(big.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(big.body).toString("utf8")).metadata.name).toBe(large);
    const little = await get(`${SECRETS}/${small}`, { "accept-encoding": "gzip" });
    expect(little.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(little.body.toString("utf8")).metadata.name).toBe(small);
  });

  it("streams a watch uncompressed, whatever the client accepts", async () => {
    const label = shared.unique("set");
    const w = await openWatch(shared.base, `${SECRETS}?watch=true&labelSelector=set%3D${label}&timeoutSeconds=5`, { "accept-encoding": "gzip" });
    expect(w.status).toBe(200);
    expect(w.headers["content-encoding"]).toBeUndefined();
    const [name] = await secrets(label, 1, GZIP_THRESHOLD_BYTES + 1_000);
    const event = await w.next(5000);
    expect(event).toMatchObject({ type: "ADDED", object: { metadata: { name } } });
    w.close();
  });
});
