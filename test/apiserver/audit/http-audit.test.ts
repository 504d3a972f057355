import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseAuditPolicy } from "../../../src/config/audit-policy.js";
import { MemoryAuditSink } from "../../../src/audit/memory-sink.js";
import { REDACTED } from "../../../src/audit/event.js";
import type { ApiServer } from "../../../src/apiserver/server.js";
import { csrObject, newCsrObject } from "../../fixtures/csr.js";
import { serviceAccount } from "../../fixtures/objects.js";
import { call, openWatch } from "../http-client.js";
import { serverFixture } from "../fixtures.js";

const CERTS = "certificates.platform.io";
const CSRS = `/apis/${CERTS}/v1/certificatesigningrequests`;
const policy = parseAuditPolicy(
  stringify({
    apiVersion: "audit.platform.io/v1",
    kind: "Policy",
    rules: [
      { level: "None", nonResourceURLs: ["/healthz*"] },
      { level: "RequestResponse", resources: [{ group: CERTS }], omitManagedFields: true },
      { level: "RequestResponse", resources: [{ group: "", resources: ["secrets", "serviceaccounts/token"] }, { group: "authentication.platform.io" }] },
      { level: "Metadata", namespaces: ["quiet"], omitStages: ["RequestReceived"] },
      { level: "Metadata" },
    ],
  }),
  "policy",
).policy;

let server: ApiServer;
const sink = new MemoryAuditSink();
const TOKEN = "eyJhbGciOiJSUzI1NiJ9.secret-token-body.signature";
beforeAll(async () => {
  server = await serverFixture({ audit: { policy, sink } });
  // Token handlers as a secure server has them, answering with a fixed token (the point is what the log keeps of it).
  server.registerCreateHandler("", "serviceaccounts/token", async (obj) => ({ ...obj, status: { token: TOKEN, expirationTimestamp: "2030-01-01T00:00:00Z" } }));
  server.registerCreateHandler(server.names.authentication, "tokenreviews", async (obj) => ({ ...obj, status: { authenticated: false } }));
});
afterAll(() => server.stop());

/** The events of the request answered with `res`, after its response (ResponseComplete is written before the body). */
const eventsOf = (res: { headers: Headers }) => sink.byId(res.headers.get("audit-id")!);

describe("audit of requests", () => {
  it("a create at RequestResponse: both stages, identity, objectRef, bodies, the authorization annotation", async () => {
    const res = await call(server.address, "POST", CSRS, { body: await newCsrObject({ name: "audited-1" }), headers: { "user-agent": "test-agent/1.0" } });
    expect(res.status).toBe(201);
    const [received, complete, ...rest] = eventsOf(res);
    expect(rest).toEqual([]);
    expect(received).toMatchObject({ kind: "Event", apiVersion: "audit.platform.io/v1", level: "RequestResponse", stage: "RequestReceived", verb: "create", requestURI: CSRS, userAgent: "test-agent/1.0", user: { username: "local-admin" } });
    expect(received!.objectRef).toEqual({ resource: "certificatesigningrequests", name: "audited-1", apiGroup: CERTS, apiVersion: "v1" });
    expect(received!.requestObject).toBeUndefined();
    expect(received!.responseStatus).toBeUndefined();
    expect(received!.sourceIPs).toEqual(["127.0.0.1"]);
    expect(complete).toMatchObject({ stage: "ResponseComplete", responseStatus: { metadata: {}, code: 201 }, annotations: { "authorization.platform.io/decision": "allow" } });
    expect((complete!.requestObject as any).metadata.name).toBe("audited-1");
    expect((complete!.responseObject as any).metadata.uid).toBe(res.body.metadata.uid);
    // omitManagedFields: the response carries them, the event does not.
    expect(res.body.metadata.managedFields).toBeDefined();
    expect((complete!.responseObject as any).metadata.managedFields).toBeUndefined();
    expect(complete!.requestReceivedTimestamp).toBe(received!.requestReceivedTimestamp);
    expect(complete!.stageTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it("honours the client's Audit-ID and always echoes one", async () => {
    const res = await call(server.address, "GET", "/version", { headers: { "Audit-ID": "my-own-id" } });
    expect(res.headers.get("audit-id")).toBe("my-own-id");
    expect(sink.byId("my-own-id").map((e) => [e.stage, e.level, e.verb, e.objectRef])).toEqual([["RequestReceived", "Metadata", "get", undefined], ["ResponseComplete", "Metadata", "get", undefined]]);
    const health = await call(server.address, "GET", "/healthz");
    expect(health.headers.get("audit-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(eventsOf(health)).toEqual([]);
  });

  it("Metadata level: no bodies; a failure's Status is in responseStatus; omitted stages are not written", async () => {
    const res = await call(server.address, "GET", "/api/v1/namespaces/quiet/serviceaccounts/missing");
    expect(res.status).toBe(404);
    const events = eventsOf(res);
    expect(events.map((e) => e.stage)).toEqual(["ResponseComplete"]);
    expect(events[0]).toMatchObject({ level: "Metadata", objectRef: { resource: "serviceaccounts", namespace: "quiet", name: "missing", apiGroup: "", apiVersion: "v1" }, responseStatus: { status: "Failure", reason: "NotFound", code: 404 } });
    expect(events[0]!.requestObject).toBeUndefined();
    expect(events[0]!.responseObject).toBeUndefined();
  });

  it("never records Secret values or tokens", async () => {
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "s1" }, type: "Opaque", data: { "tls.key": Buffer.from("-----BEGIN PRIVATE KEY-----").toString("base64") }, stringData: { password: "hunter2" } };
    const res = await call(server.address, "POST", "/api/v1/namespaces/default/secrets", { body: secret });
    expect(res.status).toBe(201);
    expect((await call(server.address, "POST", "/api/v1/namespaces/default/serviceaccounts", { body: serviceAccount({ name: "robot" }) })).status).toBe(201);
    const token = await call(server.address, "POST", "/api/v1/namespaces/default/serviceaccounts/robot/token", { body: { spec: { audiences: ["x"] } } });
    expect(token.status).toBe(201);
    expect(token.body.status.token).toBe(TOKEN);
    const review = await call(server.address, "POST", "/apis/authentication.platform.io/v1/tokenreviews", { body: { spec: { token: "review-me-secret" } } });
    expect(review.status).toBe(201);
    const patch = await call(server.address, "PATCH", "/api/v1/namespaces/default/secrets/s1", { body: [{ op: "add", path: "/data/more", value: "c2VjcmV0" }], contentType: "application/json-patch+json" });
    expect(patch.status).toBe(200);
    const events = [...eventsOf(res), ...eventsOf(token), ...eventsOf(patch), ...eventsOf(review)];
    expect(events).toHaveLength(8);
    const text = JSON.stringify(events);
    for (const leak of [secret.data["tls.key"], "hunter2", TOKEN, "c2VjcmV0", "review-me-secret"]) expect(text).not.toContain(leak);
    expect((events[1]!.requestObject as any).data).toEqual({ "tls.key": REDACTED });
    expect((events[3]!.responseObject as any).status.token).toBe(REDACTED);
    expect(events[5]!.requestObject).toEqual([{ op: "add", path: "/data/more", value: REDACTED }]);
    expect((events[5]!.responseObject as any).data).toEqual({ "tls.key": REDACTED, more: REDACTED, password: REDACTED });
    expect((events[7]!.requestObject as any).spec.token).toBe(REDACTED);
  });

  it("a watch writes ResponseStarted, then ResponseComplete when it ends", async () => {
    const watch = await openWatch(server.address, `${CSRS}?watch=1&timeoutSeconds=1`, { "audit-id": "watch-1" });
    expect(watch.headers["audit-id"]).toBe("watch-1");
    await watch.ended;
    await new Promise((r) => setTimeout(r, 50));
    expect(sink.byId("watch-1").map((e) => [e.stage, e.verb, e.responseStatus?.code])).toEqual([["RequestReceived", "watch", undefined], ["ResponseStarted", "watch", 200], ["ResponseComplete", "watch", 200]]);
  });

  it("truncates a User-Agent past 1 KiB as upstream", async () => {
    const res = await call(server.address, "GET", "/version", { headers: { "user-agent": "a".repeat(1100) } });
    expect(eventsOf(res)[0]!.userAgent).toBe(`${"a".repeat(1024)}...TRUNCATED`);
  });

  it("a sink that cannot write fails the request with 500 rather than losing the event", async () => {
    sink.failWith = new Error("disk full");
    try {
      const res = await call(server.address, "POST", CSRS, { body: csrObject({ name: "not-audited" }) });
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ kind: "Status", reason: "InternalError", message: "failed to store the audit event" });
    } finally {
      sink.failWith = undefined;
    }
    // RequestReceived failed before the handler ran: nothing was created.
    expect((await call(server.address, "GET", `${CSRS}/not-audited`)).status).toBe(404);
    const metrics = await call(server.address, "GET", "/metrics");
    expect(metrics.text).toMatch(/apiserver_audit_error_total\{plugin="log"\} [1-9]/);
    expect(metrics.text).toMatch(/apiserver_audit_event_total [1-9]/);
  });

  it("writes a read's RequestReceived with its ResponseComplete, in one write, stamped when the request arrived", async () => {
    const writes: string[] = [];
    const write = sink.write.bind(sink);
    sink.write = (lines: string) => (writes.push(lines), write(lines));
    try {
      const res = await call(server.address, "GET", "/api/v1/namespaces/default", { headers: { "Audit-ID": "read-1" } });
      expect(res.status).toBe(200);
      const create = await call(server.address, "POST", CSRS, { body: await newCsrObject({ name: "audited-write" }), headers: { "Audit-ID": "write-1" } });
      expect(create.status).toBe(201);
    } finally {
      sink.write = write;
    }
    const read = writes.filter((w) => w.includes('"auditID":"read-1"'));
    expect(read).toHaveLength(1);
    expect(read[0]!.trimEnd().split("\n").map((l) => (JSON.parse(l) as { stage: string }).stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    const [received, complete] = sink.byId("read-1");
    expect(received!.stageTimestamp).toBe(received!.requestReceivedTimestamp);
    expect(complete!.annotations).toMatchObject({ "authorization.platform.io/decision": "allow" });
    // A write's RequestReceived is stored before the handler runs: a write of its own, ahead of ResponseComplete's.
    const written = writes.filter((w) => w.includes('"auditID":"write-1"'));
    expect(written.map((w) => w.trimEnd().split("\n").length)).toEqual([1, 1]);
    expect(written[0]).toContain('"stage":"RequestReceived"');
  });

  it("a read whose events cannot be written is answered 500, without the object", async () => {
    sink.failWith = new Error("disk full");
    try {
      const res = await call(server.address, "GET", "/api/v1/namespaces/default");
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ kind: "Status", reason: "InternalError", message: "failed to store the audit event" });
      expect(res.text).not.toContain('"kind":"Namespace"');
    } finally {
      sink.failWith = undefined;
    }
  });
});
