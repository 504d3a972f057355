// Query values, missing apiVersion/kind and server-owned metadata over HTTP, as upstream's API server treats them.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseBoolValue, parseIntValue } from "../../../src/apiserver/http/query.js";
import { TOKENS, useSecureFixture } from "../bootstrap/fixtures.js";
import { call, openWatch } from "../http-client.js";
import { SA_PATH, serverFixture, sharedServer } from "../fixtures.js";
import { serviceAccount } from "../../fixtures/objects.js";

const shared = sharedServer();
const secure = useSecureFixture();
const SA = SA_PATH;

describe("query values convert as upstream's (runtime.Convert_Slice_string_To_bool / strconv.ParseInt)", () => {
  it("reads every boolean as true except 0 and any case of false", () => {
    const falseSpellings = fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }).map((upper) => [..."false"].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(""));
    fc.assert(fc.property(falseSpellings, (v) => parseBoolValue(v) === false));
    // Go's EqualFold also folds the long s (ſ) to s.
    const goFalse = (v: string) => v === "0" || v.toLowerCase().replace(/ſ/g, "s") === "false";
    fc.assert(fc.property(fc.string({ unit: "binary" }), (v) => parseBoolValue(v) === !goFalse(v)));
    expect(["falſe", "FALſE", "fałse", "false "].map(parseBoolValue)).toEqual([false, false, true, true]);
    expect(["True", "TRUE", "1", "", "yes", "maybe"].map(parseBoolValue)).toEqual([true, true, true, true, true, true]);
  });

  it("reads every int64 written in decimal, with a sign or leading zeros, and nothing else", () => {
    fc.assert(fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (n) => parseIntValue(String(n)) === Number(n)));
    fc.assert(fc.property(fc.integer({ min: 0, max: 1e9 }), fc.constantFrom("+", "0", "00"), (n, prefix) => parseIntValue(`${prefix}${n}`) === n));
    fc.assert(fc.property(fc.string(), (v) => parseIntValue(v) === undefined || /^[+-]?[0-9]+$/.test(v)));
    for (const v of ["", " 1", "1.5", "1e3", "0x10", "9223372036854775808", "-9223372036854775809", "١"]) expect(parseIntValue(v)).toBeUndefined();
  });

  it("serves the Python client's watch=True and allowWatchBookmarks=True", async () => {
    const name = shared.unique("py-watch");
    const w = await openWatch(shared.base, `${SA}?watch=True&allowWatchBookmarks=True&fieldSelector=metadata.name%3D${name}&timeoutSeconds=5`);
    expect(w.status).toBe(200);
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    let event = await w.next(5000);
    while (event?.type === "BOOKMARK") event = await w.next(5000);
    expect(event).toMatchObject({ type: "ADDED", object: { metadata: { name } } });
    w.close();
  });

  it("lists (not watches) for watch=FALSE and watch=0, and reads limit=-1 and limit=0 as no limit", async () => {
    for (let i = 0; i < 3; i++) await call(shared.base, "POST", SA, { body: serviceAccount({ name: shared.unique("lim") }) });
    for (const q of ["watch=FALSE", "watch=0", "limit=0", "limit=-1", "limit=%2B0"]) {
      const r = await call(shared.base, "GET", `${SA}?${q}`);
      expect([q, r.status, r.body.kind, r.body.metadata.continue]).toEqual([q, 200, "ServiceAccountList", undefined]);
      expect(r.body.items.length).toBeGreaterThanOrEqual(3);
    }
    const one = await call(shared.base, "GET", `${SA}?limit=%2B1`);
    expect([one.body.items.length, typeof one.body.metadata.continue]).toEqual([1, "string"]);
  });

  it.each(["limit=", "limit=1.0", "timeoutSeconds=x", "limit=99999999999999999999"])("refuses %s with 400 BadRequest naming the parameter", async (q) => {
    const r = await call(shared.base, "GET", `${SA}?${q}`);
    expect([r.status, r.body.reason]).toEqual([400, "BadRequest"]);
    expect(r.body.message).toContain(q.split("=")[0]);
  });

  it("takes a request timeout that is a duration, and refuses another with upstream's 400", async () => {
    for (const q of ["timeout=20s", "timeout=0s", "timeout=2h", "timeout=1m30s"]) expect([q, (await call(shared.base, "GET", `${SA}?${q}`)).status]).toEqual([q, 200]);
    const r = await call(shared.base, "GET", `${SA}?timeout=soon`);
    expect([r.status, r.body.reason, r.body.message]).toEqual([400, "BadRequest", "invalid timeout specified in the request URL"]);
  });

  it("takes dryRun with force=True and orphanDependents=False as upstream does", async () => {
    const name = shared.unique("force");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const p = await call(shared.base, "PATCH", `${SA}/${name}?force=True&dryRun=All`, { body: { metadata: { labels: { a: "b" } } }, contentType: "application/merge-patch+json" });
    expect(p.status).toBe(200);
    const d = await call(shared.base, "DELETE", `${SA}/${name}?orphanDependents=False`);
    expect(d.status).toBe(200);
    expect((await call(shared.base, "GET", `${SA}/${name}`)).status).toBe(404);
  });

  it("ignores parameters it does not know", async () => {
    expect((await call(shared.base, "GET", `${SA}?nosuch=1&pretty=maybe&ignoreStoreReadErrorWithClusterBreakingPotential=x`)).status).toBe(200);
  });
});

describe("a body without apiVersion or kind is the endpoint's", () => {
  it("creates and replaces a ServiceAccount sent as metadata only", async () => {
    const name = shared.unique("bare");
    const created = await call(shared.base, "POST", SA, { body: { metadata: { name } } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name } });
    const replaced = await call(shared.base, "PUT", `${SA}/${name}`, { body: { kind: "ServiceAccount", metadata: { name, labels: { a: "b" } } } });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ apiVersion: "v1", kind: "ServiceAccount", metadata: { labels: { a: "b" } } });
  });

  it("fills a TokenReview and a TokenRequest alike, and refuses a wrong kind for both with the same 400", async () => {
    const f = secure();
    const admin = { token: TOKENS.admin };
    const authn = `/apis/${f.names.authentication}/v1`;
    const review = await f.call("POST", `${authn}/tokenreviews`, { ...admin, body: { spec: { token: "nope" } } });
    expect(review.status).toBe(201);
    expect(review.body).toMatchObject({ kind: "TokenReview", apiVersion: `${f.names.authentication}/v1`, status: { authenticated: false } });
    expect((await f.call("POST", SA, { ...admin, body: { metadata: { name: "tok" } } })).status).toBe(201);
    expect((await f.call("POST", `${SA}/tok/token`, { ...admin, body: { spec: {} } })).status).toBe(201);
    for (const [path, body] of [
      [`${authn}/tokenreviews`, { kind: "TokenRequest", spec: {} }],
      [`${SA}/tok/token`, { apiVersion: "v1", spec: {} }],
    ] as const) {
      const r = await f.call("POST", path, { ...admin, body });
      expect([r.status, r.body.reason]).toEqual([400, "BadRequest"]);
      expect(r.body.message).toContain("do not match the endpoint");
    }
  });
});

describe("server-owned metadata cannot be changed by a write", () => {
  it("refuses another metadata.uid by PUT and by PATCH with upstream's 422, and keeps the object", async () => {
    const name = shared.unique("uid");
    const created = (await call(shared.base, "POST", SA, { body: serviceAccount({ name }) })).body;
    const put = await call(shared.base, "PUT", `${SA}/${name}`, { body: { ...created, metadata: { ...created.metadata, uid: "0000" } } });
    expect([put.status, put.body.reason]).toEqual([422, "Invalid"]);
    expect(put.body.message).toContain('metadata.uid: Invalid value: "0000": field is immutable');
    const patch = await call(shared.base, "PATCH", `${SA}/${name}`, { body: { metadata: { uid: "1111" } }, contentType: "application/merge-patch+json" });
    expect(patch.status).toBe(422);
    expect(patch.body.details.causes).toContainEqual({ reason: "FieldValueInvalid", field: "metadata.uid", message: 'Invalid value: "1111": field is immutable' });
    const now = (await call(shared.base, "GET", `${SA}/${name}`)).body;
    expect([now.metadata.uid, now.metadata.resourceVersion]).toEqual([created.metadata.uid, created.metadata.resourceVersion]);
  });

  it("refuses a deletionTimestamp set by a write, and keeps the stored uid and creationTimestamp when they are left out or changed", async () => {
    const name = shared.unique("dts");
    const created = (await call(shared.base, "POST", SA, { body: serviceAccount({ name }) })).body;
    const set = await call(shared.base, "PATCH", `${SA}/${name}`, { body: { metadata: { deletionTimestamp: "2030-01-01T00:00:00Z" } }, contentType: "application/merge-patch+json" });
    expect(set.status).toBe(422);
    expect(set.body.message).toContain("metadata.deletionTimestamp");
    const put = await call(shared.base, "PUT", `${SA}/${name}`, { body: { metadata: { name, creationTimestamp: "2001-01-01T00:00:00Z", labels: { x: "y" } } } });
    expect(put.status).toBe(200);
    expect(put.body.metadata).toMatchObject({ uid: created.metadata.uid, creationTimestamp: created.metadata.creationTimestamp, labels: { x: "y" } });
  });
});

describe("a watch from before the watch cache's window", () => {
  it("ends with upstream's 410 Expired: too old resource version, though storage compacted nothing", async () => {
    const server = await serverFixture({ watchCache: { capacity: 3 } });
    try {
      const first = (await call(server.address, "POST", SA, { body: serviceAccount({ name: "old-1" }) })).body;
      for (let i = 2; i <= 6; i++) await call(server.address, "POST", SA, { body: serviceAccount({ name: `old-${i}` }) });
      expect(await server.storage.compactedRevision()).toBe(0);
      const w = await openWatch(server.address, `${SA}?watch=1&resourceVersion=${first.metadata.resourceVersion}`);
      const event = await w.next(5000);
      w.close();
      expect(event).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
      expect(event.object.message).toMatch(new RegExp(`^too old resource version: ${first.metadata.resourceVersion} \\(\\d+\\)$`));
    } finally {
      await server.stop();
    }
  });
});

describe("empty metadata collections, which upstream's ObjectMeta omits (omitempty)", () => {
  const EMPTY = ["labels", "annotations", "finalizers", "ownerReferences"];

  it("leaves empty labels, annotations, finalizers and ownerReferences out of what a create stores, answers and records", async () => {
    const name = shared.unique("empty-meta");
    const created = await call(shared.base, "POST", SA, { body: { ...serviceAccount({ name }), metadata: { name, labels: {}, annotations: {}, finalizers: [], ownerReferences: [] } } });
    expect(created.status).toBe(201);
    const read = await call(shared.base, "GET", `${SA}/${name}`);
    for (const r of [created, read]) {
      for (const f of EMPTY) expect(Object.keys(r.body.metadata), f).not.toContain(f);
      expect(JSON.stringify(r.body.metadata.managedFields ?? [])).not.toMatch(/f:labels|f:annotations|f:finalizers|f:ownerReferences/);
    }
    // What is not empty stays.
    const kept = await call(shared.base, "POST", SA, { body: { ...serviceAccount({ name: `${name}-x` }), metadata: { name: `${name}-x`, labels: { a: "b" }, annotations: {} } } });
    expect(kept.body.metadata.labels).toEqual({ a: "b" });
    expect(Object.keys(kept.body.metadata)).not.toContain("annotations");
  });

  it("takes kubectl diff's patch of empty annotations as the no-op upstream makes of it, dry run or not", async () => {
    const name = shared.unique("empty-meta");
    const created = await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const patch = { metadata: { annotations: {}, resourceVersion: created.body.metadata.resourceVersion } };
    for (const query of ["?dryRun=All&fieldManager=kubectl-client-side-apply", "?fieldManager=kubectl-client-side-apply"]) {
      const r = await call(shared.base, "PATCH", `${SA}/${name}${query}`, { body: patch, contentType: "application/strategic-merge-patch+json" });
      expect(r.status, query).toBe(200);
      expect(Object.keys(r.body.metadata), query).not.toContain("annotations");
      expect(r.body.metadata.resourceVersion, query).toBe(created.body.metadata.resourceVersion);
      expect(r.body.metadata.managedFields, query).toEqual(created.body.metadata.managedFields);
    }
  });

  it("drops a labels map that a patch emptied", async () => {
    const name = shared.unique("empty-meta");
    await call(shared.base, "POST", SA, { body: { ...serviceAccount({ name }), metadata: { name, labels: { only: "one" } } } });
    const r = await call(shared.base, "PATCH", `${SA}/${name}`, { body: [{ op: "remove", path: "/metadata/labels/only" }], contentType: "application/json-patch+json" });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.metadata)).not.toContain("labels");
    expect((await call(shared.base, "GET", `${SA}/${name}`)).body.metadata.labels).toBeUndefined();
  });
});
