// bench:audit — requests/s of `platform-ca apiserver` (TLS, client certificates, RBAC) with audit off, at Metadata and at
// RequestResponse, in the same run: one server per setting, rounds interleaved so the shared machine's load falls on all.
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
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
const SETTINGS = ["off", "Metadata", "RequestResponse"] as const;

const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-audit-"));
/** The audit flags of a setting: one catch-all rule at that level, the log in the temp directory. */
function auditArgs(setting: (typeof SETTINGS)[number]): string[] {
  if (setting === "off") return [];
  const policy = join(dir, `${setting}.yaml`);
  writeFileSync(policy, `apiVersion: audit.platform.io/v1\nkind: Policy\nrules:\n  - level: ${setting}\n`);
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
        const key = `${kind.name}\t${s}`;
        results.set(key, [...(results.get(key) ?? []), r.requests / r.seconds]);
        cpu.set(key, [...(cpu.get(key) ?? []), r.serverMicros]);
      }
    }
  }
  console.log(`bench:audit — ${new Date().toISOString()}, node ${process.version}, ${CONCURRENCY} connections, ${ROUNDS} rounds × ${SECONDS} s per cell, medians`);
  console.log("| request | measure | audit off | Metadata | RequestResponse | Metadata cost | RequestResponse cost |");
  console.log("|---|---|---|---|---|---|---|");
  for (const kind of kinds) {
    for (const [measure, table, sign] of [["req/s", results, 1], ["server CPU µs/req", cpu, -1]] as const) {
      const med = (s: string) => percentile(table.get(`${kind.name}\t${s}`)!, 50);
      const [off, meta, full] = SETTINGS.map(med) as [number, number, number];
      const cost = (v: number) => `${(((off - v) / off) * 100 * sign).toFixed(1)}%`;
      console.log(`| ${kind.name} | ${measure} | ${off.toFixed(0)} | ${meta.toFixed(0)} | ${full.toFixed(0)} | ${cost(meta)} | ${cost(full)} |`);
    }
  }
  // The log and its rotated files (every 100 MB).
  for (const s of SETTINGS.slice(1)) {
    const bytes = readdirSync(dir).filter((f) => f.startsWith(s) && f.endsWith(".log")).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
    console.log(`audit log at ${s}: ${(bytes / 1024 / 1024).toFixed(1)} MiB`);
  }
} finally {
  for (const c of clusters.values()) await c.stop();
  rmSync(dir, { recursive: true, force: true });
}
