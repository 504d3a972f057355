// The API server with two audit sinks (the log and a webhook): what a failing webhook does to requests in each mode,
// and what the metrics count.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { AuditWebhookBackend, type AuditWebhookMode } from "../../../src/apiserver/audit/webhook-backend.js";
import { MemoryAuditSink } from "../../../src/audit/memory-sink.js";
import { parseAuditPolicy } from "../../../src/config/audit-policy.js";
import type { ApiServer } from "../../../src/apiserver/server.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { call } from "../http-client.js";
import { serverFixture } from "../fixtures.js";

const CSRS = "/apis/certificates.platform.io/v1/certificatesigningrequests";
const policy = parseAuditPolicy(stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] }), "policy").policy;

/** A server whose webhook receiver fails while `down` is set; `lists` holds the EventLists it took. */
async function withWebhook(mode: AuditWebhookMode) {
  const state = { down: false, lists: [] as { items: { auditID: string; stage: string }[] }[] };
  const log = new MemoryAuditSink();
  const webhook = new AuditWebhookBackend({
    mode,
    apiVersion: "audit.platform.io/v1",
    post: async (body) => {
      if (state.down) throw new Error("receiver down");
      state.lists.push(JSON.parse(body));
    },
  });
  const server = await serverFixture({ audit: { policy, sink: [log, webhook] } });
  return { server, log, state };
}

const metric = async (server: ApiServer, name: string) => /\n(\S+) (\d+)/.exec(`\n${(await call(server.address, "GET", "/metrics")).text.split("\n").filter((l) => l.startsWith(name)).join("\n")}`)?.[2];

describe("audit to a webhook in blocking mode", () => {
  let s: Awaited<ReturnType<typeof withWebhook>>;
  beforeAll(async () => (s = await withWebhook("blocking")));
  afterAll(() => s.server.stop());

  it("sends each request's events before answering it", async () => {
    const res = await call(s.server.address, "GET", "/version", { headers: { "Audit-ID": "blocking-1" } });
    expect(res.status).toBe(200);
    const sent = s.state.lists.flatMap((l) => l.items).filter((e) => e.auditID === "blocking-1");
    expect(sent.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
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
  afterAll(() => s.server.stop());

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
