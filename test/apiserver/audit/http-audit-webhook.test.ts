// The API server with two audit sinks (the log and a webhook posting through the webhook client to a real HTTPS
// receiver): what a failing receiver does to requests in each mode, and what the metrics count.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { AuditWebhookBackend, type AuditWebhookMode } from "../../../src/apiserver/audit/webhook-backend.js";
import { WebhookClient } from "../../../src/apiserver/webhook/client.js";
import { restConfig } from "../../client/fixtures/config.js";
import { createTestPki, type TestPki } from "../../client/fixtures/pki.js";
import { sendJson, startServer } from "../../client/fixtures/server.js";
import { MemoryAuditSink } from "../../../src/audit/memory-sink.js";
import { parseAuditPolicy } from "../../../src/config/audit-policy.js";
import type { ApiServer } from "../../../src/apiserver/server.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { call } from "../http-client.js";
import { serverFixture } from "../fixtures.js";

const CSRS = "/apis/certificates.platform.io/v1/certificatesigningrequests";
const policy = parseAuditPolicy(stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] }), "policy").policy;

let pki: TestPki;
beforeAll(() => (pki = createTestPki()));
afterAll(() => pki.remove());

/** A server whose webhook receiver answers 503 while `down` is set; `lists` holds the EventLists it took. */
async function withWebhook(mode: AuditWebhookMode) {
  const state = { down: false, lists: [] as { items: { auditID: string; stage: string }[] }[] };
  const receiver = await startServer((req, res) => {
    if (state.down) return sendJson(res, 503, { message: "receiver down" });
    state.lists.push(JSON.parse(req.body));
    sendJson(res, 200, {});
  }, { tls: { cert: pki.server.cert, key: pki.server.key } });
  const config = restConfig({ server: `${receiver.url}/events`, tls: { ca: pki.ca }, credentials: { type: "token", token: "t" } });
  const client = new WebhookClient({ config, retry: { initialBackoffMs: 1, attempts: 2 } });
  const log = new MemoryAuditSink();
  const webhook = new AuditWebhookBackend({ mode, apiVersion: "audit.platform.io/v1", post: (body, signal) => client.post(body, signal), release: () => client.close() });
  const server = await serverFixture({ audit: { policy, sink: [log, webhook] } });
  const stop = async () => {
    await server.stop();
    await webhook.close();
    await receiver.close();
  };
  return { server, log, state, receiver, stop };
}

const metric = async (server: ApiServer, name: string) => /\n(\S+) (\d+)/.exec(`\n${(await call(server.address, "GET", "/metrics")).text.split("\n").filter((l) => l.startsWith(name)).join("\n")}`)?.[2];

describe("audit to a webhook in blocking mode", () => {
  let s: Awaited<ReturnType<typeof withWebhook>>;
  beforeAll(async () => (s = await withWebhook("blocking")));
  afterAll(() => s.stop());

  it("sends each request's events before answering it", async () => {
    const res = await call(s.server.address, "GET", "/version", { headers: { "Audit-ID": "blocking-1" } });
    expect(res.status).toBe(200);
    const sent = s.state.lists.flatMap((l) => l.items).filter((e) => e.auditID === "blocking-1");
    expect(sent.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(s.receiver.requests.at(-1)!.headers.authorization).toBe("Bearer t");
  });

  it("answers requests while the receiver fails; the log has their events and the failure is counted", async () => {
    s.state.down = true;
    try {
      const res = await call(s.server.address, "POST", CSRS, { body: await newCsrObject({ name: "while-down" }) });
      expect(res.status).toBe(201);
      expect(s.log.byId(res.headers.get("audit-id")!).map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    } finally {
      s.state.down = false;
    }
    expect(Number(await metric(s.server, 'apiserver_audit_error_total{plugin="webhook"}'))).toBeGreaterThanOrEqual(2);
    expect(await metric(s.server, 'apiserver_audit_error_total{plugin="log"}')).toBe("0");
    expect(await metric(s.server, "apiserver_audit_requests_rejected_total")).toBe("0");
  });
});

describe("audit to a webhook in blocking-strict mode", () => {
  let s: Awaited<ReturnType<typeof withWebhook>>;
  beforeAll(async () => (s = await withWebhook("blocking-strict")));
  afterAll(() => s.stop());

  it("refuses a request whose RequestReceived event the receiver did not take, before carrying it out", async () => {
    s.state.down = true;
    try {
      const res = await call(s.server.address, "POST", CSRS, { body: await newCsrObject({ name: "strict-refused" }) });
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ kind: "Status", reason: "InternalError", message: "failed to store the audit event" });
    } finally {
      s.state.down = false;
    }
    expect((await call(s.server.address, "GET", `${CSRS}/strict-refused`)).status).toBe(404);
    expect(await metric(s.server, "apiserver_audit_requests_rejected_total")).toBe("1");
  });
});
