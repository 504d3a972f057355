import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logger.js";
import { insecureLocalPipeline } from "../../src/apiserver/pipeline.js";
import { createApiServer } from "../../src/apiserver/server.js";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import { stringify as toYaml, parse as fromYaml } from "yaml";
import { csr, csrObject } from "../fixtures/csr.js";
import { call } from "./http-client.js";
import { SA_PATH, serverFixture, sharedServer, TABLE_ACCEPT } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { serviceAccount } from "../fixtures/objects.js";

const shared = sharedServer();
const SA = SA_PATH;
const unique = shared.unique;

describe("errors are Status objects", () => {
  it.each([
    ["GET", "/nowhere", 404, "NotFound"],
    ["GET", "/openapi/v3/apis/unknown.example.com/v1", 404, "NotFound"],
    ["PUT", SA, 405, "MethodNotAllowed"],
    ["POST", `${SA}/x`, 405, "MethodNotAllowed"],
    ["GET", `${SA}/absent`, 404, "NotFound"],
    ["GET", "/api/v1/namespaces/default/serviceaccounts/absent/nosuch", 404, "NotFound"],
    ["DELETE", "/version", 405, "MethodNotAllowed"],
  ])("%s %s answers %i %s", async (method, path, code, reason) => {
    const r = await call(shared.base, method, path);
    expect(r.status).toBe(code);
    expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", reason, code });
    expect(typeof r.body.message).toBe("string");
  });

  it.each([
    ["malformed JSON", '{"apiVersion": "v1", kind', "application/json", 400, "not valid JSON"],
    ["malformed YAML", "apiVersion: v1\nkind: [unclosed", "application/yaml", 400, "not valid YAML"],
    ["two YAML documents", "a: 1\n---\nb: 2\n", "application/yaml", 400, "exactly one YAML document"],
    ["a YAML alias without its anchor", "*\0", "application/yaml", 400, "not valid YAML"],
    ["a YAML alias named but never anchored", "apiVersion: v1\nkind: ServiceAccount\nmetadata: *m\n", "application/yaml", 400, "Unresolved alias"],
    ["a YAML alias inside its own anchor", "&m {apiVersion: v1, kind: ServiceAccount, metadata: {name: c, x: *m}}", "application/yaml", 400, "cycle"],
    ["a YAML ordered map with a repeated key", "!!omap [{a: 1}, {a: 2}]", "application/yaml", 400, "not valid YAML"],
    ["a __proto__ key", '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"p1","labels":{"__proto__":"x"}}}', "application/json", 400, '"__proto__" is not accepted'],
    ["an escaped __proto__ key", '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"p2","annotations":{"\\u005f_proto__":"x"}}}', "application/json", 400, '"__proto__" is not accepted'],
    ["a YAML __proto__ key", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: p3, labels: {__proto__: x}}\n", "application/yaml", 400, '"__proto__" is not accepted'],
    ["a JSON array", "[1,2]", "application/json", 400, "must be a JSON or YAML object"],
    ["an empty body", "", "application/json", 400, "empty"],
    ["a wrong kind", JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: "a" } }), "application/json", 400, "do not match the endpoint"],
    ["an invalid name", JSON.stringify(serviceAccount({ name: "Bad Name" })), "application/json", 422, "metadata.name"],
    ["a mismatched namespace", JSON.stringify(serviceAccount({ namespace: "platform-system" })), "application/json", 400, "does not match the namespace"],
    ["an unsupported media type", "x", "application/cbor", 415, "not supported"],
    ["a protobuf body without the envelope", "x", "application/vnd.kubernetes.protobuf", 400, "envelope"],
  ])("refuses %s with a clear Status and stores nothing", async (_what, body, contentType, code, words) => {
    const before = await shared.server.storage.revision();
    const r = await call(shared.base, "POST", SA, { body, contentType });
    expect(r.status).toBe(code);
    expect(r.body.message).toContain(words);
    expect(await shared.server.storage.revision()).toBe(before);
  });

  it.each([
    ["a malformed %-escape in a resource path", "GET", "/apis/certificates.platform.io/v1/certificatesigningrequests/%zz", {}, 400, "BadRequest", "the request URL is malformed"],
    ["a malformed %-escape in an unknown path", "GET", "/%zz", {}, 400, "BadRequest", "the request URL is malformed"],
    ["a method node does not know (FOO)", "FOO", SA, {}, 405, "MethodNotAllowed", "use one of GET"],
    ["a method the server does not route (PROPFIND)", "PROPFIND", SA, {}, 405, "MethodNotAllowed", "the server does not allow the method PROPFIND"],
    ["a 70 KB path", "GET", `${SA}/${"x".repeat(70 * 1024)}`, {}, 431, "BadRequest", "larger than the limit of 65536 bytes"],
    ["a 70 KB bearer token", "GET", SA, { authorization: `Bearer ${"t".repeat(70 * 1024)}` }, 431, "BadRequest", "larger than the limit of 65536 bytes"],
  ])("answers %s with a Status", async (_what, method, path, headers, code, reason, words) => {
    const r = await call(shared.base, method, path, { headers });
    expect(r.status).toBe(code);
    expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", reason, code });
    expect(r.body.message).toContain(words);
  });

  it.each([
    ["a 20 KB path", `${SA}/${"x".repeat(20 * 1024)}`, {}, 404],
    ["a 60 KB bearer token", SA, { authorization: `Bearer ${"t".repeat(60 * 1024)}` }, 200],
  ])("serves a request with %s (headers up to 64 KiB)", async (_what, path, headers, code) => {
    const r = await call(shared.base, "GET", path, { headers });
    expect(r.status).toBe(code);
    expect(r.body.kind).toBe(code === 200 ? "ServiceAccountList" : "Status");
  });

  it("answers 413 for a body over 3 MiB", async () => {
    const big = JSON.stringify(serviceAccount({ annotations: { a: "x".repeat(3 * 1024 * 1024) } }));
    const r = await call(shared.base, "POST", SA, { body: big });
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ kind: "Status", reason: "RequestEntityTooLarge", code: 413 });
    expect(r.body.message).toContain("3 MiB");
  });
});

describe("names no storage key can hold", () => {
  const csrs = () => `/apis/${shared.server.names.certificates}/v1/certificatesigningrequests`;
  const unstorable = ["a%20b", "%C3%84", "a%00b", "x".repeat(1100)];
  const writes: [string, (name: string) => { body: unknown; contentType?: string } | undefined][] = [
    ["GET", () => undefined],
    ["DELETE", () => undefined],
    ["PUT", (name) => ({ body: { apiVersion: "v1", kind: "Secret", metadata: { name } } })],
    ["PATCH", () => ({ body: { metadata: { labels: { a: "b" } } }, contentType: "application/merge-patch+json" })],
  ];

  it.each(writes.flatMap(([method, body]) => unstorable.map((segment) => [method, segment, body] as const)))(
    "%s of a Secret named %s answers 404 NotFound without storage detail",
    async (method, segment, body) => {
      const before = await shared.server.storage.revision();
      const r = await call(shared.base, method, `/api/v1/namespaces/default/secrets/${segment}`, body(decodeURIComponent(segment)) ?? {});
      expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404, details: { name: decodeURIComponent(segment), kind: "secrets" } });
      expect(r.body.message).not.toMatch(/storage|key/);
      expect(await shared.server.storage.revision()).toBe(before);
    },
  );

  it.each(unstorable)("GET of a CertificateSigningRequest named %s answers 404 NotFound", async (segment) => {
    const r = await call(shared.base, "GET", `${csrs()}/${segment}`);
    expect(r.body).toMatchObject({ kind: "Status", status: "Failure", reason: "NotFound", code: 404 });
    expect(r.body.message).toBe(`certificatesigningrequests.${shared.server.names.certificates} "${decodeURIComponent(segment)}" not found`);
  });

  it.each([["a b"], ["Ä"], ["x".repeat(1100)]])("refuses to create a CertificateSigningRequest named %s with 422 on metadata.name, storing nothing", async (name) => {
    const before = await shared.server.storage.revision();
    const r = await call(shared.base, "POST", csrs(), { body: csrObject({ names: shared.server.names, signerName: shared.server.names.signers.apiserverClient, name, request: (await csr({ cn: "key" })).pem }) });
    expect(r.body).toMatchObject({ kind: "Status", status: "Failure", reason: "Invalid", code: 422, details: { causes: [{ field: "metadata.name", reason: "FieldValueInvalid" }] } });
    expect(r.body.message).toContain("metadata.name: Invalid value");
    expect(r.body.message).toContain("must consist of printable ASCII characters other than space");
    expect(r.body.message).not.toMatch(/storage|key/);
    expect(await shared.server.storage.revision()).toBe(before);
  });

  it("lists nothing in a namespace no storage key can hold, and creates nothing there", async () => {
    const list = await call(shared.base, "GET", "/api/v1/namespaces/a%20b/secrets");
    expect([list.status, list.body.kind, list.body.items]).toEqual([200, "SecretList", []]);
    const created = await call(shared.base, "POST", "/api/v1/namespaces/a%20b/serviceaccounts", { body: serviceAccount({ name: "sa" }) });
    expect(created.body).toMatchObject({ kind: "Status", reason: "NotFound", code: 404, message: 'namespaces "a b" not found' });
  });
});

describe("create, read and write over HTTP", () => {
  it("creates from JSON (201) and serves it back as JSON, pretty JSON and YAML", async () => {
    const name = unique("json");
    const created = await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    expect(created.status).toBe(201);
    expect(created.headers.get("content-type")).toContain("application/json");
    const got = await call(shared.base, "GET", `${SA}/${name}`);
    expect(got.body).toEqual(created.body);
    // Compact JSON is the stored text as the create answered it and a LIST page carries it, not a re-encoding.
    expect(got.text).toBe(created.text);
    expect((await call(shared.base, "GET", `${SA}?fieldSelector=metadata.name=${name}`)).text).toContain(`"items":[${got.text}]`);
    const pretty = await call(shared.base, "GET", `${SA}/${name}?pretty=true`);
    expect(pretty.text).toContain('\n  "kind": "ServiceAccount"');
    const yaml = await call(shared.base, "GET", `${SA}/${name}`, { accept: "application/yaml" });
    expect(yaml.headers.get("content-type")).toContain("application/yaml");
    expect(fromYaml(yaml.text)).toEqual(created.body);
  });

  it("creates from YAML", async () => {
    const name = unique("yaml");
    const r = await call(shared.base, "POST", SA, { body: toYaml(serviceAccount({ name })), contentType: "application/yaml" });
    expect([r.status, r.body.metadata.name]).toEqual([201, name]);
  });

  it("answers 201 Created with the object, as upstream, and stores nothing for dryRun=All", async () => {
    const name = unique("dry");
    const r = await call(shared.base, "POST", `${SA}?dryRun=All`, { body: serviceAccount({ name }) });
    expect([r.status, r.body.kind, r.body.metadata.name]).toEqual([201, "ServiceAccount", name]);
    expect((await call(shared.base, "GET", `${SA}/${name}`)).status).toBe(404);
  });

  it("answers 409 AlreadyExists and 409 Conflict", async () => {
    const name = unique("dup");
    const first = await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const again = await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    expect([again.status, again.body.reason, again.body.details]).toEqual([409, "AlreadyExists", { name, group: "", kind: "serviceaccounts" }]);
    await call(shared.base, "PUT", `${SA}/${name}`, { body: { ...first.body, automountServiceAccountToken: true } });
    const stale = await call(shared.base, "PUT", `${SA}/${name}`, { body: { ...first.body, automountServiceAccountToken: false } });
    expect([stale.status, stale.body.reason]).toEqual([409, "Conflict"]);
  });

  it.each([
    ["Strict", 400, undefined],
    ["Warn", 201, 'unknown field \\"spec\\"'],
    ["Ignore", 201, undefined],
  ] as [string, number, string | undefined][])("fieldValidation=%s handles an unknown field", async (mode, code, warning) => {
    const name = unique("fv");
    const r = await call(shared.base, "POST", `${SA}?fieldValidation=${mode}`, { body: { ...serviceAccount({ name }), spec: { foo: 1 } } });
    expect(r.status).toBe(code);
    if (code === 400) expect(r.body.message).toContain('unknown field "spec"');
    else expect(r.body).not.toHaveProperty("spec");
    expect(r.headers.get("warning") ?? undefined).toBe(warning === undefined ? undefined : `299 - "${warning}"`);
    if (code === 201) expect((await call(shared.base, "GET", `${SA}/${name}`)).body).not.toHaveProperty("spec");
  });

  it("refuses duplicate JSON keys under fieldValidation=Strict", async () => {
    const name = unique("dupkey");
    const body = `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"${name}","name":"${name}"}}`;
    const r = await call(shared.base, "POST", `${SA}?fieldValidation=Strict`, { body });
    expect([r.status, r.body.message]).toEqual([400, expect.stringContaining('duplicate field "metadata.name"')]);
  });

  it("refuses a field of the wrong JSON type", async () => {
    const r = await call(shared.base, "POST", SA, { body: { ...serviceAccount({ name: unique("type") }), automountServiceAccountToken: "yes" } });
    expect([r.status, r.body.message]).toEqual([400, expect.stringContaining("automountServiceAccountToken")]);
  });

  it.each([
    ["application/json-patch+json", [{ op: "add", path: "/metadata/labels", value: { via: "json" } }], "json"],
    ["application/merge-patch+json", { metadata: { labels: { via: "merge" } } }, "merge"],
    ["application/strategic-merge-patch+json", { metadata: { labels: { via: "strategic" } } }, "strategic"],
  ])("patches with %s", async (contentType, patch, via) => {
    const name = unique("patch");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const r = await call(shared.base, "PATCH", `${SA}/${name}`, { body: patch, contentType });
    expect([r.status, r.body.metadata.labels]).toEqual([200, { via }]);
  });

  it.each([
    ["application/apply-patch+yaml", "a: 1", 422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'],
    ["text/plain", "{}", 415, "not supported"],
    ["application/json-patch+json", JSON.stringify([{ op: "remove", path: "/nope" }]), 422, ""],
    ["application/merge-patch+json", "{not json", 400, "not valid JSON"],
    ["application/merge-patch+json", JSON.stringify({ metadata: { name: "renamed" } }), 400, "does not match the name"],
    ["application/merge-patch+json", JSON.stringify({ kind: "Secret" }), 400, "do not match the endpoint"],
    // A JSON string is a patch of the wrong shape, never text to decode again.
    ["application/merge-patch+json", JSON.stringify(JSON.stringify({ metadata: { labels: { dbl: "parsed" } } })), 422, "a JSON merge patch must be a JSON object, got a string"],
    ["application/strategic-merge-patch+json", JSON.stringify(JSON.stringify({ metadata: { labels: { dbl: "parsed" } } })), 422, "a strategic merge patch must be a JSON object, got a string"],
    ["application/json-patch+json", JSON.stringify(JSON.stringify([{ op: "add", path: "/metadata/labels", value: { dbl: "parsed" } }])), 422, "a JSON patch must be a JSON array of operations, got a string"],
    ["application/merge-patch+json", '"x"', 422, "a JSON merge patch must be a JSON object, got a string"],
    ["application/json-patch+json", "{}", 422, "a JSON patch must be a JSON array of operations, got an object"],
    ["application/merge-patch+json", "null", 422, "a JSON merge patch must be a JSON object, got null"],
    ["application/json-patch+json", '[{"op":"add","path":"/metadata/labels","value":{"a":"b"},"op":"remove"}]', 422, "must not repeat a member"],
  ])("refuses a %s patch %s and changes nothing", async (contentType, body, code, words) => {
    const name = unique("badpatch");
    const created = await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const r = await call(shared.base, "PATCH", `${SA}/${name}`, { body, contentType });
    expect(r.status).toBe(code);
    expect(r.body.message).toContain(words);
    expect((await call(shared.base, "GET", `${SA}/${name}`)).body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);
  });

  it("deletes a ServiceAccount answering with the object, and a CSR answering with a Status", async () => {
    const name = unique("del");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const r = await call(shared.base, "DELETE", `${SA}/${name}`);
    expect([r.status, r.body.kind, r.body.metadata.name]).toEqual([200, "ServiceAccount", name]);
    const pem = (await csr({ cn: "del" })).pem;
    const csrName = unique("csr");
    const path = `/apis/${shared.server.names.certificates}/v1/certificatesigningrequests`;
    expect((await call(shared.base, "POST", path, { body: csrObject({ names: shared.server.names, signerName: shared.server.names.signers.apiserverClient, name: csrName, request: pem }) })).status).toBe(201);
    const d = await call(shared.base, "DELETE", `${path}/${csrName}`);
    expect(d.body).toMatchObject({ kind: "Status", status: "Success", details: { name: csrName, kind: "certificatesigningrequests" } });
  });

  it("honours DeleteOptions preconditions from the body", async () => {
    const name = unique("pre");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const r = await call(shared.base, "DELETE", `${SA}/${name}`, { body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid: "other" }, propagationPolicy: "Background" } });
    expect([r.status, r.body.reason]).toEqual([409, "Conflict"]);
  });

  const badDeleteOptions: [string, { body?: unknown; query?: string }, number, string][] = [
    ["dryRun other than All in the body", { body: { kind: "DeleteOptions", apiVersion: "v1", dryRun: ["Some"] } }, 422, 'dryRun: Unsupported value: ["Some"]'],
    ["dryRun All beside another value in the body", { body: { kind: "DeleteOptions", apiVersion: "v1", dryRun: ["All", "Some"] } }, 422, "dryRun: Unsupported value"],
    ["an unknown propagationPolicy in the body", { body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Bogus" } }, 422, 'propagationPolicy: Unsupported value: "Bogus"'],
    ["orphanDependents beside propagationPolicy in the body", { body: { kind: "DeleteOptions", apiVersion: "v1", orphanDependents: true, propagationPolicy: "Background" } }, 422, "cannot be both set"],
    ["a negative gracePeriodSeconds in the body", { body: { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: -10 } }, 422, "gracePeriodSeconds: Invalid value: -10"],
    ["a body of another kind", { body: { kind: "Pod", apiVersion: "v1" } }, 400, "takes a DeleteOptions"],
    ["a DeleteOptions body of another apiVersion", { body: { kind: "DeleteOptions", apiVersion: "apps/v1" } }, 400, "takes a DeleteOptions"],
    ["a dryRun that is not a list", { body: { kind: "DeleteOptions", apiVersion: "v1", dryRun: "All" } }, 400, "DeleteOptions.dryRun must be a list of strings"],
    ["a JSON array body", { body: [] }, 400, "must be a DeleteOptions object"],
    ["dryRun other than All in the query", { query: "dryRun=Some" }, 422, 'dryRun: Unsupported value: ["Some"]'],
    ["an unknown propagationPolicy in the query", { query: "propagationPolicy=Bogus" }, 422, 'propagationPolicy: Unsupported value: "Bogus"'],
    ["orphanDependents beside propagationPolicy in the query", { query: "orphanDependents=true&propagationPolicy=Orphan" }, 422, "cannot be both set"],
    ["a negative gracePeriodSeconds in the query", { query: "gracePeriodSeconds=-10" }, 422, "gracePeriodSeconds: Invalid value: -10"],
    ["a gracePeriodSeconds that is not an integer in the query", { query: "gracePeriodSeconds=soon" }, 400, "expected an integer"],
    ["a valid body beside an invalid query", { body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background" }, query: "propagationPolicy=Bogus" }, 422, "Bogus"],
  ];

  it.each(badDeleteOptions)("refuses a delete with %s and deletes nothing", async (_what, o, code, words) => {
    const name = unique("delopt");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const before = await shared.server.storage.revision();
    const r = await call(shared.base, "DELETE", `${SA}/${name}${o.query ? `?${o.query}` : ""}`, o.body === undefined ? {} : { body: o.body });
    expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason: code === 422 ? "Invalid" : "BadRequest" });
    expect(r.body.message).toContain(words);
    expect(await shared.server.storage.revision()).toBe(before);
    expect((await call(shared.base, "GET", `${SA}/${name}`)).status).toBe(200);
  });

  it.each(badDeleteOptions)("refuses a deletecollection with %s and deletes nothing", async (_what, o, code, words) => {
    const set = unique("delcoll");
    for (const name of [`${set}-a`, `${set}-b`]) await call(shared.base, "POST", SA, { body: serviceAccount({ name, labels: { set } }) });
    const before = await shared.server.storage.revision();
    const r = await call(shared.base, "DELETE", `${SA}?labelSelector=set%3D${set}${o.query ? `&${o.query}` : ""}`, o.body === undefined ? {} : { body: o.body });
    expect(r.body).toMatchObject({ kind: "Status", status: "Failure", code });
    expect(r.body.message).toContain(words);
    expect(await shared.server.storage.revision()).toBe(before);
    expect((await call(shared.base, "GET", `${SA}?labelSelector=set%3D${set}`)).body.items).toHaveLength(2);
  });

  it.each([
    ["a body of v1 DeleteOptions with dryRun All", { kind: "DeleteOptions", apiVersion: "v1", dryRun: ["All"] }],
    ["a body of meta.k8s.io/v1 DeleteOptions with dryRun All", { kind: "DeleteOptions", apiVersion: "meta.k8s.io/v1", dryRun: ["All"], propagationPolicy: "Foreground" }],
    ["a body without kind and apiVersion with dryRun All", { dryRun: ["All"], gracePeriodSeconds: 0 }],
  ])("accepts %s and keeps the object", async (_what, body) => {
    const name = unique("deldry");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const r = await call(shared.base, "DELETE", `${SA}/${name}`, { body });
    expect([r.status, r.body.metadata?.name]).toEqual([200, name]);
    expect((await call(shared.base, "GET", `${SA}/${name}`)).status).toBe(200);
  });

  it("deletes a collection by label selector", async () => {
    const keep = unique("keep");
    const drop = unique("drop");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name: keep, labels: { set: "a" } }) });
    await call(shared.base, "POST", SA, { body: serviceAccount({ name: drop, labels: { set: "b" } }) });
    const r = await call(shared.base, "DELETE", `${SA}?labelSelector=set%3Db`);
    expect(r.body).toMatchObject({ kind: "Status", status: "Success" });
    expect((await call(shared.base, "GET", `${SA}/${drop}`)).status).toBe(404);
    expect((await call(shared.base, "GET", `${SA}/${keep}`)).status).toBe(200);
  });
});

describe("lists, selectors and Table", () => {
  it("lists across namespaces and by selectors", async () => {
    const name = unique("sel");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name, labels: { pick: "me" } }) });
    const all = await call(shared.base, "GET", "/api/v1/serviceaccounts");
    expect(all.body.kind).toBe("ServiceAccountList");
    expect(all.body.items.some((i: any) => i.metadata.name === name)).toBe(true);
    const picked = await call(shared.base, "GET", `${SA}?labelSelector=pick%20in%20(me)`);
    expect(picked.body.items.map((i: any) => i.metadata.name)).toEqual([name]);
    const byName = await call(shared.base, "GET", `${SA}?fieldSelector=metadata.name%3D${name}`);
    expect(byName.body.items).toHaveLength(1);
    expect(Number(byName.body.metadata.resourceVersion)).toBeGreaterThan(0);
  });

  it.each([
    ["labelSelector=a%20b%20c", "unable to parse"],
    ["fieldSelector=spec.foo%3Dx", "field label not supported: spec.foo"],
    ["limit=ten", "limit"],
    ["timeoutSeconds=1.5", "timeoutSeconds"],
  ])("refuses %s with 400", async (query, words) => {
    const r = await call(shared.base, "GET", `${SA}?${query}`);
    expect([r.status, r.body.reason]).toEqual([400, "BadRequest"]);
    expect(r.body.message).toContain(words);
  });

  it("filters CSRs by spec.signerName", async () => {
    const pem = (await csr({ cn: "sel" })).pem;
    const path = `/apis/${shared.server.names.certificates}/v1/certificatesigningrequests`;
    const name = unique("signer");
    await call(shared.base, "POST", path, { body: csrObject({ names: shared.server.names, name, request: pem, signerName: "example.com/custom" }) });
    const r = await call(shared.base, "GET", `${path}?fieldSelector=spec.signerName%3Dexample.com%2Fcustom`);
    expect(r.body.items.map((i: any) => i.metadata.name)).toEqual([name]);
  });

  it("serves a Table to kubectl's Accept list", async () => {
    const name = unique("tbl");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const r = await call(shared.base, "GET", `${SA}?fieldSelector=metadata.name%3D${name}`, { accept: TABLE_ACCEPT });
    expect(r.body).toMatchObject({ kind: "Table", apiVersion: "meta.k8s.io/v1" });
    expect(r.body.columnDefinitions[0].name).toBe("Name");
    expect(r.body.rows[0].cells[0]).toBe(name);
    expect(r.body.rows[0].object).toMatchObject({ kind: "PartialObjectMetadata", metadata: { name } });
    const one = await call(shared.base, "GET", `${SA}/${name}`, { accept: TABLE_ACCEPT });
    expect(one.body.rows).toHaveLength(1);
  });

  it("answers 406 when nothing acceptable is offered", async () => {
    const r = await call(shared.base, "GET", SA, { accept: "application/vnd.kubernetes.protobuf" });
    expect([r.status, r.body.reason]).toEqual([406, "NotAcceptable"]);
  });
});

describe("discovery, health and handlers", () => {
  it("serves /api, /apis, /version and group resource lists", async () => {
    expect((await call(shared.base, "GET", "/api")).body).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const groups = (await call(shared.base, "GET", "/apis")).body.groups.map((g: any) => g.name);
    expect(groups).toContain(shared.server.names.certificates);
    expect((await call(shared.base, "GET", "/version")).body.gitVersion).toMatch(/^v1\.\d+\.\d+-platform-ca$/);
    const list = await call(shared.base, "GET", `/apis/${shared.server.names.certificates}/v1`);
    expect(list.body.resources.map((r: any) => r.name)).toContain("certificatesigningrequests/approval");
  });

  it.each(["/healthz", "/livez", "/readyz"])("answers %s with ok, and per check with ?verbose", async (path) => {
    expect((await call(shared.base, "GET", path)).text).toBe("ok");
    const verbose = await call(shared.base, "GET", `${path}?verbose`);
    expect(verbose.text).toContain("[+]storage ok");
    expect(verbose.text).toContain("check passed");
  });

  it("answers 404 for a create-only kind until a handler is registered", async () => {
    const path = `/apis/${shared.server.names.authentication}/v1/tokenreviews`;
    const body = { apiVersion: `${shared.server.names.authentication}/v1`, kind: "TokenReview", spec: { token: "t" } };
    const before = await call(shared.base, "POST", path, { body });
    expect([before.status, before.body.message]).toEqual([404, expect.stringContaining("no handler registered")]);
    shared.server.registerCreateHandler(shared.server.names.authentication, "tokenreviews", async (obj, ctx) => ({ ...obj, metadata: {}, status: { authenticated: false, user: { username: ctx.user?.username ?? "" } } }));
    const after = await call(shared.base, "POST", path, { body });
    expect([after.status, after.body.status]).toEqual([201, { authenticated: false, user: { username: "local-admin" } }]);
    expect((await call(shared.base, "GET", path)).status).toBe(405);
  });
});

describe("serving options", () => {
  it("refuses plain HTTP unless insecure is set", () => {
    expect(() => createApiServer({ storage: new MemoryStorage(), pipeline: insecureLocalPipeline(silentLogger()) })).toThrow("expected `tls` to be set");
  });

  it("serves HTTPS with the given key and certificate", async () => {
    const dir = tempDir("apiserver-tls-");
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
    const cert = readFileSync(join(dir, "cert.pem"));
    const tlsServer = await serverFixture({ insecure: false, tls: { key: readFileSync(join(dir, "key.pem")), cert } });
    try {
      expect(tlsServer.address).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const body = await new Promise<string>((resolve, reject) => {
        httpsGet(`${tlsServer.address}/version`, { ca: cert }, (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => resolve(text));
        }).on("error", reject);
      });
      expect(JSON.parse(body).major).toBe("1");
    } finally {
      await tlsServer.stop();
    }
  });
});
