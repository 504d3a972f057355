// bench:audit — requests/s of `platform-ca apiserver` (TLS, client certificates, RBAC) with audit off, at Metadata and at
// RequestResponse to the log, and at Metadata to a webhook (batch mode), in the same run: one server per setting,
// rounds interleaved so the shared machine's load falls on all.
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { restConfigFromConnection } from "../../src/client/index.js";
import { compareServerSettings } from "./server-settings.js";

const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-audit-"));
/** The webhook setting's receiver (plain HTTP, in this process): takes every EventList and counts its events. */
let received = 0;
const receiver = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c: Buffer) => (body += c));
  req.on("end", () => {
    received += (JSON.parse(body) as { items: unknown[] }).items.length;
    res.end("{}");
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const webhookConfig = join(dir, "webhook-client.conf");
writeFileSync(webhookConfig, `apiVersion: v1\nkind: Config\nclusters: [{name: r, cluster: {server: "http://127.0.0.1:${(receiver.address() as AddressInfo).port}/"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: r, user: u}}]\ncurrent-context: c\n`);

/** The audit flags at `level`: one catch-all rule, the log in the temp directory (or the webhook, with upstream's batch defaults). */
function auditArgs(level: "Metadata" | "RequestResponse", to: "log" | "webhook"): string[] {
  const policy = join(dir, `${level}-${to}.yaml`);
  writeFileSync(policy, `apiVersion: audit.platform.io/v1\nkind: Policy\nrules:\n  - level: ${level}\n`);
  if (to === "webhook") return ["--audit-policy-file", policy, "--audit-webhook-config-file", webhookConfig];
  return ["--audit-policy-file", policy, "--audit-log-path", join(dir, `${level}.log`)];
}

const WEBHOOK = "Metadata (webhook)";
try {
  await compareServerSettings(
    "bench:audit",
    [
      { name: "audit off", args: [] },
      { name: "Metadata (log)", args: auditArgs("Metadata", "log") },
      { name: "RequestResponse (log)", args: auditArgs("RequestResponse", "log") },
      { name: WEBHOOK, args: auditArgs("Metadata", "webhook") },
    ],
    async ({ clusters, requests }) => {
      // What the webhook's buffer dropped, as the server counts it.
      const hook = clusters.get(WEBHOOK)!;
      const own = await restConfigFromConnection({ kubeconfig: hook.adminConfig });
      const metrics = await new Promise<string>((resolve, reject) => {
        https.get(`${hook.address}/metrics`, { ca: own.tls.ca, cert: own.tls.cert, key: own.tls.key }, (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c));
          res.on("end", () => resolve(text));
        }).on("error", reject);
      });
      const count = (name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, "\\$&")} (\\d+)`, "m").exec(metrics)?.[1] ?? 0);
      console.log(`webhook: ${received} events received (${requests.get(WEBHOOK)} measured requests), ${count('apiserver_audit_error_total{plugin="buffered"}')} dropped by the full buffer, ${count('apiserver_audit_error_total{plugin="webhook"}')} undelivered`);
      // The log and its rotated files (every 100 MB).
      for (const level of ["Metadata", "RequestResponse"]) {
        const bytes = readdirSync(dir).filter((f) => f.startsWith(level) && f.endsWith(".log")).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
        console.log(`audit log at ${level}: ${(bytes / 1024 / 1024).toFixed(1)} MiB`);
      }
    },
  );
} finally {
  receiver.close();
  rmSync(dir, { recursive: true, force: true });
}
