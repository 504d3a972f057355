// `platform-ca up` with the audit webhook backend against a real HTTPS receiver (mutual TLS) started by the test:
// batches arrive as EventLists; a receiver that stops answering fills the buffer without slowing API requests, and
// the dropped events are counted in /metrics.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createClient, type RestClient } from "../../src/client/rest-client.js";
import { restConfigFromConnection } from "../../src/client/connection-config.js";
import type { AuditEvent } from "../../src/audit/event.js";
import { createTestPki, type TestPki } from "../client/fixtures/pki.js";
import { sendJson, startServer, type TestServer } from "../client/fixtures/server.js";
import { newCsrObject } from "../fixtures/csr.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { percentile } from "../bench/measure.js";
import { ensureBuilt, kubectlWith } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";

const POLICY = { apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "None", nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/metrics"] }, { level: "Metadata" }] };
const CSRS = "/apis/certificates.platform.io/v1/certificatesigningrequests";

describe("platform-ca up --audit-webhook-config-file (batch mode)", () => {
  let pki: TestPki;
  let receiver: TestServer;
  let up: UpProcess;
  let admin: RestClient;
  /** While set, the receiver holds every answer this long (a receiver that stopped keeping up). */
  const state = { delayMs: 0 };
  const lists = (): { kind: string; apiVersion: string; items: AuditEvent[] }[] => receiver.requests.map((r) => JSON.parse(r.body));
  const received = (): AuditEvent[] => lists().flatMap((l) => l.items);
  const metric = async (line: string): Promise<number> => {
    const text = kubectlWith(up.adminConfig)(["get", "--raw", "/metrics"]);
    return Number(new RegExp(`^${line.replace(/[{}"]/g, "\\$&")} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  };

  beforeAll(async () => {
    ensureBuilt();
    pki = createTestPki();
    receiver = await startServer(async (_req, res) => {
      if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
      sendJson(res, 200, {});
    }, { tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.ca, requireClientCert: true } });
    const dir = tempDir();
    writeFileSync(join(dir, "policy.yaml"), stringify(POLICY));
    writeFileSync(join(dir, "webhook.yaml"), stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "receiver", cluster: { server: `${receiver.url}/audit`, "certificate-authority": pki.caPath } }],
      users: [{ name: "apiserver", user: { "client-certificate": pki.client.certPath, "client-key": pki.client.keyPath } }],
      contexts: [{ name: "audit", context: { cluster: "receiver", user: "apiserver" } }],
      "current-context": "audit",
    }));
    up = await startUp({ args: [
      "--audit-policy-file", join(dir, "policy.yaml"), "--audit-webhook-config-file", join(dir, "webhook.yaml"),
      "--audit-webhook-batch-max-wait", "200ms", "--audit-webhook-batch-max-size", "5", "--audit-webhook-batch-buffer-size", "20",
      "--audit-webhook-batch-throttle-enable=false", "--audit-webhook-initial-backoff", "100ms",
    ] });
    admin = createClient(await restConfigFromConnection({ kubeconfig: up.adminConfig, qps: -1 }));
  }, 240_000);
  afterAll(async () => {
    state.delayMs = 0;
    admin?.close();
    if (up?.child.exitCode === null) await up.stop();
    await receiver?.close();
    pki?.remove();
  });

  it("POSTs EventList batches over mutual TLS, the create of a CSR among them, and drops nothing while the receiver answers", async () => {
    // The start's spike of requests (the controllers' lists and watches, the objects made in every namespace) may
    // overflow a buffer this small; from here on, with the receiver answering, nothing more is dropped.
    const droppedAtStart = await metric('apiserver_audit_error_total{plugin="buffered"}');
    await admin.request("POST", CSRS, await newCsrObject({ name: "webhook-audited" }));
    const until = Date.now() + 10_000;
    while (!received().some((e) => e.objectRef?.name === "webhook-audited" && e.stage === "ResponseComplete") && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const create = received().filter((e) => e.objectRef?.name === "webhook-audited" && e.verb === "create");
    expect(create.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(create[1]).toMatchObject({ kind: "Event", apiVersion: "audit.platform.io/v1", level: "Metadata", responseStatus: { code: 201 }, objectRef: { resource: "certificatesigningrequests", apiGroup: "certificates.platform.io" } });
    expect(create[1]!.requestObject).toBeUndefined();
    for (const l of lists()) {
      expect([l.kind, l.apiVersion]).toEqual(["EventList", "audit.platform.io/v1"]);
      expect(l.items.length).toBeLessThanOrEqual(5);
    }
    expect(receiver.requests.every((r) => r.clientCn === "alice" && r.url === "/audit")).toBe(true);
    expect(JSON.stringify(received())).not.toContain("PRIVATE KEY");
    expect(await metric('apiserver_audit_error_total{plugin="buffered"}')).toBe(droppedAtStart);
  });

  it("a receiver that stops answering fills the buffer: requests stay fast, the drop is counted", async () => {
    const before = await metric('apiserver_audit_error_total{plugin="buffered"}');
    state.delayMs = 8_000;
    // 16 batches of 5 in flight and 20 buffered hold 100 events: 300 requests (600 events) overflow them.
    const latencies: number[] = [];
    for (let wave = 0; wave < 15; wave++) {
      await Promise.all(Array.from({ length: 20 }, async () => {
        const started = performance.now();
        await admin.request("GET", "/version");
        latencies.push(performance.now() - started);
      }));
    }
    const dropped = await metric('apiserver_audit_error_total{plugin="buffered"}');
    expect(dropped).toBeGreaterThan(before);
    // Every request was answered while no batch could be delivered (each would have waited 8 s).
    expect(latencies).toHaveLength(300);
    expect(Math.max(...latencies)).toBeLessThan(2_000);
    expect(percentile(latencies, 50)).toBeLessThan(250);
    expect(await metric("apiserver_audit_requests_rejected_total")).toBe(0);
    // The receiver catches up (once the batches it held are answered): events of new requests are delivered again.
    state.delayMs = 0;
    let delivered: AuditEvent[] = [];
    for (let i = 0; i < 60 && delivered.length < 2; i++) {
      await admin.request("GET", "/version", undefined, { headers: { "Audit-ID": `after-the-drop-${i}` } });
      await new Promise((r) => setTimeout(r, 500));
      delivered = received().filter((e) => e.auditID === `after-the-drop-${i}`);
    }
    expect(delivered.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
  }, 120_000);
});
