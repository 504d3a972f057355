// `platform-ca up` with an EgressSelectorConfiguration whose `controlplane` selection goes through a real HTTP CONNECT
// proxy (tinyproxy): the audit webhook's batches reach their HTTPS receiver only through a tunnel of that proxy.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createTestPki, type TestPki } from "../client/fixtures/pki.js";
import { sendJson, startServer, type TestServer } from "../client/fixtures/server.js";
import { startTinyproxy, type TestProxy } from "../fixtures/connect-proxy.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";
import { ensureBuilt, kubectlWith } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";

describe("platform-ca up: the audit webhook dials through the controlplane egress selection", () => {
  let pki: TestPki;
  let receiver: TestServer;
  let proxy: TestProxy;
  let up: UpProcess;

  beforeAll(async () => {
    ensureBuilt();
    pki = createTestPki();
    receiver = await startServer(async (_req, res) => sendJson(res, 200, {}), { tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.ca } });
    proxy = await startTinyproxy();
    const dir = tempDir();
    writeFileSync(join(dir, "policy.yaml"), stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata", resources: [{ group: "", resources: ["namespaces"] }] }] }));
    writeFileSync(join(dir, "webhook.yaml"), stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "receiver", cluster: { server: `${receiver.url}/audit`, "certificate-authority": pki.caPath } }],
      users: [{ name: "apiserver", user: {} }],
      contexts: [{ name: "audit", context: { cluster: "receiver", user: "apiserver" } }],
      "current-context": "audit",
    }));
    writeFileSync(join(dir, "egress.yaml"), stringify({
      apiVersion: "apiserver.platform.io/v1beta1",
      kind: "EgressSelectorConfiguration",
      egressSelections: [{ name: "controlplane", connection: { proxyProtocol: "HTTPConnect", transport: { tcp: { url: proxy.address } } } }],
    }));
    up = await startUp({ args: [
      "--audit-policy-file", join(dir, "policy.yaml"), "--audit-webhook-config-file", join(dir, "webhook.yaml"),
      "--audit-webhook-batch-max-wait", "200ms", "--audit-webhook-batch-throttle-enable=false",
      "--egress-selector-config-file", join(dir, "egress.yaml"),
    ] });
  }, 240_000);
  afterAll(async () => {
    await up?.stop();
    await proxy?.close();
    await receiver?.close();
  });

  it("delivers the events through a tunnel to the receiver, and through nothing else", async () => {
    kubectlWith(up.adminConfig)(["create", "namespace", "through-the-proxy"]);
    await until(() => receiver.requests.some((r) => r.body.includes("through-the-proxy")), "the namespace's audit event at the receiver");
    const target = new URL(receiver.url).host;
    expect(proxy.tunnels()).toContain(target);
    expect(new Set(proxy.tunnels())).toEqual(new Set([target]));
  }, 120_000);
});
