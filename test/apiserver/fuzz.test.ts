import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import { csr, csrObject } from "../fixtures/csr.js";
import { serverFixture } from "./fixtures.js";
import { controllerRevision, serviceAccount } from "../fixtures/objects.js";

type Server = Awaited<ReturnType<typeof serverFixture>>;
let server: Server;
let csrPem: string;

const CONTENT_TYPES = [
  "application/json",
  "application/yaml",
  "application/merge-patch+json",
  "application/json-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
  "application/vnd.kubernetes.protobuf",
  "text/plain",
  "",
];

beforeAll(async () => {
  server = await serverFixture();
  csrPem = (await csr({ cn: "fuzz" })).pem;
  // The objects exist, so updates and patches reach the strategies instead of stopping at 404.
  for (const ep of endpoints()) expect((await send("POST", ep.collection, JSON.stringify(ep.valid()), "application/json")).statusCode).toBe(201);
});
afterAll(async () => {
  await server.stop();
});

function endpoints() {
  const certs = `/apis/${server.names.certificates}/v1/certificatesigningrequests`;
  return [
    { collection: "/api/v1/namespaces/default/serviceaccounts", valid: () => serviceAccount({ name: "fuzz-sa" }) },
    { collection: certs, valid: () => csrObject({ names: server.names, name: "fuzz-csr", request: csrPem, signerName: server.names.signers.apiserverClient }) },
    { collection: "/apis/apps/v1/namespaces/default/controllerrevisions", valid: () => controllerRevision({ name: "fuzz-rev" }) },
  ];
}

/** Sends one request in-process; every answer must be a non-5xx (a Status for errors). */
async function send(method: string, url: string, payload: string | Buffer, contentType: string) {
  const res = await server.app.inject({ method: method as "POST", url, payload, headers: contentType ? { "content-type": contentType } : {} });
  if (res.statusCode >= 500) throw new Error(`${method} ${url} (${contentType}) answered ${res.statusCode}: ${res.body}\nbody: ${String(payload).slice(0, 500)}`);
  if (res.statusCode >= 400) {
    const status = JSON.parse(res.body);
    if (status.kind !== "Status" || status.code !== res.statusCode) throw new Error(`error without a Status: ${res.body}`);
  }
  return res;
}

/** A random edit of a valid object: set or delete a field at a random path. */
const mutation = fc.record({
  path: fc.array(fc.oneof(fc.constantFrom("metadata", "spec", "name", "labels", "request", "usages", "namespace", "revision", "data", "status", "finalizers"), fc.string({ maxLength: 8 })), { minLength: 1, maxLength: 4 }),
  value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined)),
});

function mutate(obj: ApiObject, edits: readonly { path: string[]; value: unknown }[]): ApiObject {
  const copy = structuredClone(obj) as Record<string, unknown>;
  for (const { path, value } of edits) {
    let at: Record<string, unknown> = copy;
    for (const key of path.slice(0, -1)) {
      if (key === "__proto__") break;
      if (typeof at[key] !== "object" || at[key] === null) at[key] = {};
      at = at[key] as Record<string, unknown>;
    }
    const last = path.at(-1)!;
    if (last === "__proto__") continue;
    if (value === undefined) delete at[last];
    else at[last] = value;
  }
  return copy as ApiObject;
}

describe("request bodies never crash the server", () => {
  it("answers random JSON on every write verb with a 4xx or success, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(2), fc.constantFrom("POST", "PUT", "PATCH", "DELETE"), fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(...CONTENT_TYPES), async (e, method, value, contentType) => {
        const ep = endpoints()[e]!;
        const url = method === "POST" ? ep.collection : `${ep.collection}/${ep.valid().metadata.name}`;
        await send(method, url, JSON.stringify(value), contentType);
      }),
      { numRuns: 300 },
    );
  });

  it("answers random mutations of valid objects with a 4xx or success, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(2), fc.constantFrom("POST", "PUT", "PATCH"), fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.boolean(), async (e, method, edits, yaml) => {
        const ep = endpoints()[e]!;
        const body = mutate(ep.valid(), edits);
        const url = method === "POST" ? ep.collection : `${ep.collection}/${ep.valid().metadata.name}`;
        const contentType = method === "PATCH" ? "application/merge-patch+json" : yaml ? "application/yaml" : "application/json";
        await send(method, url, JSON.stringify(body), contentType);
      }),
      { numRuns: 300 },
    );
  });

  it("answers random bytes and random JSON patches with a 4xx or success", async () => {
    const op = fc.record({ op: fc.constantFrom("add", "remove", "replace", "move", "copy", "test", "bogus"), path: fc.constantFrom("/metadata/labels", "/spec", "/metadata/name", "/x", "", "/metadata/finalizers/0", "bad"), from: fc.constantFrom("/metadata", "/spec/usages"), value: fc.jsonValue({ maxDepth: 2 }) });
    await fc.assert(
      fc.asyncProperty(fc.nat(2), fc.oneof(fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), fc.array(op, { maxLength: 4 }).map((ops) => JSON.stringify(ops))), fc.constantFrom(...CONTENT_TYPES), async (e, payload, contentType) => {
        const ep = endpoints()[e]!;
        await send("POST", ep.collection, payload, contentType);
        await send("PATCH", `${ep.collection}/${ep.valid().metadata.name}`, payload, contentType);
      }),
      { numRuns: 200 },
    );
  });

  it("answers YAML-shaped text (anchors, aliases, tags, merge keys) with a 4xx or success", async () => {
    const token = fc.constantFrom("&a ", "*a", "*b", "&b ", "!!omap ", "!!set ", "!!binary ", "!x ", "<<: ", "? ", ": ", "- ", "[", "]", "{", "}", ", ", "\n", "  ", "a", "metadata", "name: x", "apiVersion: v1", "kind: ServiceAccount", "'", '"', "#", "|", "1", ".nan");
    await fc.assert(
      fc.asyncProperty(fc.nat(2), fc.constantFrom("POST", "PUT"), fc.array(token, { maxLength: 24 }).map((t) => t.join("")), async (e, method, text) => {
        const ep = endpoints()[e]!;
        const url = method === "POST" ? ep.collection : `${ep.collection}/${ep.valid().metadata.name}`;
        await send(method, url, text, "application/yaml");
      }),
      { numRuns: 400 },
    );
  });

  it.each(["POST", "PUT"])("answers %s of a YAML body whose key is binary (kept in a Warning header) with a 4xx or success", async (method) => {
    // Found by the property above: `!!binary kind` decodes to a key of bytes, named in an unknown-field warning.
    for (const ep of endpoints()) {
      const url = method === "POST" ? ep.collection : `${ep.collection}/${ep.valid().metadata.name}`;
      const res = await send(method, url, "!!binary kind: ServiceAccount", "application/yaml");
      for (const value of [res.headers.warning ?? []].flat()) expect(String(value)).toMatch(/^[\x20-\x7e]*$/);
    }
  });

  it("stays up and healthy afterwards", async () => {
    const res = await server.app.inject({ method: "GET", url: "/healthz" });
    expect([res.statusCode, res.body]).toEqual([200, "ok"]);
    const list = await server.app.inject({ method: "GET", url: "/api/v1/namespaces/default/serviceaccounts" });
    expect(list.statusCode).toBe(200);
  });
});
