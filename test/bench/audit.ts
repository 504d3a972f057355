// bench:audit — requests/s of `platform-ca apiserver` (TLS, client certificates, RBAC) with audit off, at Metadata and at
// RequestResponse to the log, and at Metadata to a webhook (batch mode), in the same run: one server per setting,
// rounds interleaved so the shared machine's load falls on all.
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { restConfigFromConnection } from "../../src/client/index.js";
import { startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { newCsrObject } from "../fixtures/csr.js";
import { percentile } from "./measure.js";
import { measureLoad, type LoadSpec } from "./request-load.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SETTINGS = ["off", "Metadata", "RequestResponse", "webhook"] as const;

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

/** The audit flags of a setting: one catch-all rule at that level, the log in the temp directory (or the webhook, with upstream's batch defaults). */
function auditArgs(setting: (typeof SETTINGS)[number]): string[] {
  if (setting === "off") return [];
  const level = setting === "webhook" ? "Metadata" : setting;
  const policy = join(dir, `${setting}.yaml`);
  writeFileSync(policy, `apiVersion: audit.platform.io/v1\nkind: Policy\nrules:\n  - level: ${level}\n`);
  if (setting === "webhook") return ["--audit-policy-file", policy, "--audit-webhook-config-file", webhookConfig];
  return ["--audit-policy-file", policy, "--audit-log-path", join(dir, `${setting}.log`)];
}

const clusters = new Map<string, Cluster>();
try {
  for (const s of SETTINGS) clusters.set(s, await startCluster({ apiserverArgs: auditArgs(s) }));
  const n = clusters.get("off")!.names;
  // generateName: every create makes a distinct object.
  const csrBody = JSON.stringify(await newCsrObject({ names: n, metadata: { generateName: "bench-" }, cn: "system:node:bench", o: ["system:nodes"] }));
  const kinds = [
    { name: "POST CertificateSigningRequest (durable, distinct objects)", method: "POST", path: `/apis/${n.certificates}/v1/certificatesigningrequests`, body: csrBody },
    { name: "GET namespace", method: "GET", path: "/api/v1/namespaces/default" },
  ];
  const results = new Map<string, number[]>();
  /** The server's CPU µs per request: steadier than req/s on a shared machine. */
  const cpu = new Map<string, number[]>();
  let webhookRequests = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of kinds) {
      // The order turns each round, so no setting always runs first (or last) on a machine whose load drifts.
      for (const s of SETTINGS.map((_, i) => SETTINGS[(i + round) % SETTINGS.length]!)) {
        const c = clusters.get(s)!;
        // Each server has its own CA: its own admin.conf credentials.
        const own = await restConfigFromConnection({ kubeconfig: c.adminConfig });
        const spec: LoadSpec = { url: c.address + kind.path, method: kind.method, tls: { ca: own.tls.ca!, cert: own.tls.cert!, key: own.tls.key! }, concurrency: CONCURRENCY, seconds: SECONDS, ...(kind.body && { body: kind.body }) };
        const r = await measureLoad(c.apiserver.child.pid!, spec);
        const ok = Object.entries(r.codes).filter(([code]) => code.startsWith("2")).reduce((sum, [, v]) => sum + v, 0);
        if (ok !== r.requests) throw new Error(`${kind.name} (${s}): not every request succeeded: ${JSON.stringify(r.codes)}`);
        if (s === "webhook") webhookRequests += r.requests;
        const key = `${kind.name}\t${s}`;
        results.set(key, [...(results.get(key) ?? []), r.requests / r.seconds]);
        cpu.set(key, [...(cpu.get(key) ?? []), r.serverMicros]);
      }
    }
  }
  console.log(`bench:audit — ${new Date().toISOString()}, node ${process.version}, ${CONCURRENCY} connections, ${ROUNDS} rounds × ${SECONDS} s per cell, medians`);
  console.log("| request | measure | audit off | Metadata (log) | RequestResponse (log) | Metadata (webhook) | Metadata cost | RequestResponse cost | webhook cost |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const kind of kinds) {
    for (const [measure, table, sign] of [["req/s", results, 1], ["server CPU µs/req", cpu, -1]] as const) {
      const med = (s: string) => percentile(table.get(`${kind.name}\t${s}`)!, 50);
      const [off, meta, full, hook] = SETTINGS.map(med) as [number, number, number, number];
      const cost = (v: number) => `${(((off - v) / off) * 100 * sign).toFixed(1)}%`;
      console.log(`| ${kind.name} | ${measure} | ${off.toFixed(0)} | ${meta.toFixed(0)} | ${full.toFixed(0)} | ${hook.toFixed(0)} | ${cost(meta)} | ${cost(full)} | ${cost(hook)} |`);
    }
  }
  // The log and its rotated files (every 100 MB).
  // Two events a request (RequestReceived, ResponseComplete); what the receiver lacks was dropped (or not yet sent).
  await new Promise((r) => setTimeout(r, 1000));
  console.log(`webhook: ${received} events received of ${2 * webhookRequests} (${((1 - received / (2 * webhookRequests)) * 100).toFixed(1)}% dropped or still buffered)`);
  for (const s of ["Metadata", "RequestResponse"]) {
    const bytes = readdirSync(dir).filter((f) => f.startsWith(s) && f.endsWith(".log")).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
    console.log(`audit log at ${s}: ${(bytes / 1024 / 1024).toFixed(1)} MiB`);
  }
} finally {
  for (const c of clusters.values()) await c.stop();
  receiver.close();
  rmSync(dir, { recursive: true, force: true });
}
