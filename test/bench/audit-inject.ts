// The audit's CPU per request in process (fastify inject, no TLS, memory storage): off, Metadata to the log, Metadata
// to the webhook (batch mode; the receiver is another process, so its CPU is not counted). Each cell is a process of
// its own (warm-up, then the measured window), so no setting's garbage or background sends land in another's figure;
// the settings' order turns each round.
// Run: npm run build && node dist/test/bench/audit-inject.js
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { AuditWebhookBackend } from "../../src/apiserver/audit/webhook-backend.js";
import { insecureLocalPipeline } from "../../src/apiserver/pipeline.js";
import { createApiServer, type ApiServerOptions } from "../../src/apiserver/server.js";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import { loadWebhookConfig, WebhookClient } from "../../src/apiserver/webhook/client.js";
import { AuditLogFile } from "../../src/audit/log-backend.js";
import { parseAuditPolicy } from "../../src/config/audit-policy.js";
import { silentLogger } from "../../src/logger.js";
import { envNumber, percentile } from "./measure.js";

const ROUNDS = envNumber("BENCH_ROUNDS", 6);
const CELL_MS = envNumber("BENCH_CELL_MS", 1500);
const WARMUP_MS = envNumber("BENCH_WARMUP_MS", 1000);
const CONCURRENCY = 16;
const SETTINGS = ["off", "Metadata (log)", "Metadata (webhook)"] as const;
type Setting = (typeof SETTINGS)[number];

/** One cell, in this (child) process: the server at `setting`, warmed up, then the CPU µs per GET over CELL_MS. */
async function cell(setting: Setting, dir: string): Promise<number> {
  const policy = parseAuditPolicy("apiVersion: audit.platform.io/v1\nkind: Policy\nrules: [{ level: Metadata }]\n", "bench").policy;
  let client: WebhookClient | undefined;
  let audit: ApiServerOptions["audit"];
  if (setting === "Metadata (log)") audit = { policy, sink: new AuditLogFile({ path: join(dir, `audit-${process.pid}.log`) }) };
  if (setting === "Metadata (webhook)") {
    client = new WebhookClient({ config: await loadWebhookConfig(join(dir, "hook.conf"), "bench webhook config"), retry: { initialBackoffMs: 1000 } });
    const c = client;
    audit = { policy, sink: new AuditWebhookBackend({ mode: "batch", apiVersion: "audit.platform.io/v1", post: (body, signal) => c.post(body, signal) }) };
  }
  const s = createApiServer({ insecure: true, storage: new MemoryStorage(), pipeline: insecureLocalPipeline(silentLogger()), ...(audit && { audit }) });
  await s.start();
  const loop = async (ms: number): Promise<number> => {
    let n = 0;
    const end = performance.now() + ms;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const r = await s.app.inject({ method: "GET", url: "/api/v1/namespaces/default" });
        if (r.statusCode !== 200) throw new Error(`GET answered ${r.statusCode}: ${r.body}`);
        n++;
      }
    }));
    return n;
  };
  await loop(WARMUP_MS);
  const cpu = process.cpuUsage();
  const n = await loop(CELL_MS);
  const used = process.cpuUsage(cpu);
  await s.stop();
  client?.close();
  return (used.user + used.system) / n;
}

const child = process.env.BENCH_AUDIT_CELL as Setting | undefined;
if (child !== undefined) {
  console.log(JSON.stringify(await cell(child, process.env.BENCH_AUDIT_DIR!)));
} else {
  const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-audit-inject-"));
  // A receiver that takes every batch and says nothing, in a process of its own.
  const receiver = spawn(process.execPath, ["-e", `require("http").createServer((q, s) => { q.resume(); q.on("end", () => s.end("{}")); }).listen(0, "127.0.0.1", function () { console.log(this.address().port); });`], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const [port] = (await once(createInterface({ input: receiver.stdout! }), "line")) as [string];
    writeFileSync(join(dir, "hook.conf"), `apiVersion: v1\nkind: Config\nclusters: [{name: r, cluster: {server: "http://127.0.0.1:${port}/"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: r, user: u}}]\ncurrent-context: c\n`);
    const results = new Map<Setting, number[]>(SETTINGS.map((k) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < SETTINGS.length; i++) {
        const k = SETTINGS[(i + round) % SETTINGS.length]!;
        const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], { env: { ...process.env, BENCH_AUDIT_CELL: k, BENCH_AUDIT_DIR: dir }, encoding: "utf8" });
        if (r.status !== 0) throw new Error(`the ${k} cell failed: ${r.stderr}`);
        results.get(k)!.push(Number(r.stdout.trim().split("\n").at(-1)));
      }
    }
    const off = percentile(results.get("off")!, 50);
    console.log(`bench:audit in process — ${new Date().toISOString()}, node ${process.version}, ${CONCURRENCY} concurrent GETs, ${ROUNDS} rounds × ${CELL_MS} ms (after ${WARMUP_MS} ms of warm-up), a process per cell, medians`);
    for (const k of SETTINGS) {
      const all = results.get(k)!;
      const med = percentile(all, 50);
      console.log(`${k}: ${med.toFixed(1)} µs CPU/request${k === "off" ? "" : ` (+${(((med - off) / off) * 100).toFixed(1)}%)`}  [${all.map((v) => v.toFixed(1)).join(", ")}]`);
    }
  } finally {
    receiver.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
