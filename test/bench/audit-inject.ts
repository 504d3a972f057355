// The audit's CPU per request in process (fastify inject, no TLS, memory storage): off, Metadata to the log, Metadata
// to the webhook (batch mode; the receiver is another process, so its CPU is not counted). Rounds interleaved.
// Run: npm run build && node dist/test/bench/audit-inject.js
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { AuditWebhookBackend } from "../../src/apiserver/audit/webhook-backend.js";
import { insecureLocalPipeline } from "../../src/apiserver/pipeline.js";
import { createApiServer, type ApiServer, type ApiServerOptions } from "../../src/apiserver/server.js";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import { loadWebhookConfig, WebhookClient } from "../../src/apiserver/webhook/client.js";
import { AuditLogFile } from "../../src/audit/log-backend.js";
import { parseAuditPolicy } from "../../src/config/audit-policy.js";
import { silentLogger } from "../../src/logger.js";
import { envNumber, percentile } from "./measure.js";

const ROUNDS = envNumber("BENCH_ROUNDS", 6);
const CELL_MS = envNumber("BENCH_CELL_MS", 1500);
const CONCURRENCY = 16;

const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-audit-inject-"));
// A receiver that takes every batch and says nothing, in a process of its own.
const receiver = spawn(process.execPath, ["-e", `require("http").createServer((q, s) => { q.resume(); q.on("end", () => s.end("{}")); }).listen(0, "127.0.0.1", function () { console.log(this.address().port); });`], { stdio: ["ignore", "pipe", "inherit"] });
const [port] = (await once(createInterface({ input: receiver.stdout! }), "line")) as [string];
writeFileSync(join(dir, "hook.conf"), `apiVersion: v1\nkind: Config\nclusters: [{name: r, cluster: {server: "http://127.0.0.1:${port}/"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: r, user: u}}]\ncurrent-context: c\n`);
const client = new WebhookClient({ config: await loadWebhookConfig(join(dir, "hook.conf"), "bench webhook config"), retry: { initialBackoffMs: 1000 } });
const policy = parseAuditPolicy("apiVersion: audit.platform.io/v1\nkind: Policy\nrules: [{ level: Metadata }]\n", "bench").policy;

async function server(audit?: ApiServerOptions["audit"]): Promise<ApiServer> {
  const s = createApiServer({ insecure: true, storage: new MemoryStorage(), pipeline: insecureLocalPipeline(silentLogger()), ...(audit && { audit }) });
  await s.start();
  return s;
}

const servers: Record<string, ApiServer> = {
  off: await server(),
  "Metadata (log)": await server({ policy, sink: new AuditLogFile({ path: join(dir, "audit.log") }) }),
  "Metadata (webhook)": await server({ policy, sink: new AuditWebhookBackend({ mode: "batch", apiVersion: "audit.platform.io/v1", post: (body, signal) => client.post(body, signal) }) }),
};

/** The process's CPU µs per GET while `CONCURRENCY` callers repeat it for CELL_MS. */
async function cell(s: ApiServer): Promise<number> {
  let n = 0;
  const end = performance.now() + CELL_MS;
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < end) {
      const r = await s.app.inject({ method: "GET", url: "/api/v1/namespaces/default" });
      if (r.statusCode !== 200) throw new Error(`GET answered ${r.statusCode}: ${r.body}`);
      n++;
    }
  }));
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / n;
}

try {
  const keys = Object.keys(servers);
  const results = new Map<string, number[]>(keys.map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < keys.length; i++) {
      const k = keys[(i + round) % keys.length]!;
      results.get(k)!.push(await cell(servers[k]!));
    }
  }
  const off = percentile(results.get("off")!, 50);
  console.log(`bench:audit in process — ${new Date().toISOString()}, node ${process.version}, ${CONCURRENCY} concurrent GETs, ${ROUNDS} rounds × ${CELL_MS} ms, medians`);
  for (const k of keys) {
    const med = percentile(results.get(k)!, 50);
    console.log(`${k}: ${med.toFixed(1)} µs CPU/request${k === "off" ? "" : ` (+${(((med - off) / off) * 100).toFixed(1)}%)`}`);
  }
} finally {
  for (const s of Object.values(servers)) await s.stop();
  client.close();
  receiver.kill();
  rmSync(dir, { recursive: true, force: true });
}
