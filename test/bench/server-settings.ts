// Requests/s and server CPU per request of `platform-ca apiserver` under several flag settings, in one run: one server
// per setting, cells interleaved (the order turning each round) so the shared machine's load falls on every setting.
import { restConfigFromConnection } from "../../src/client/index.js";
import { startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { csrObject } from "../fixtures/csr.js";
import { envNumber, percentile } from "./measure.js";
import { CSR_PLACEHOLDER, measureLoad, type LoadSpec } from "./request-load.js";

export interface ServerSetting {
  readonly name: string;
  readonly args: readonly string[];
}

/** What a bench may read of its servers before they stop: each setting's server and its measured request count. */
export interface ServerSettingsRun {
  readonly clusters: ReadonlyMap<string, Cluster>;
  readonly requests: ReadonlyMap<string, number>;
}

/**
 * Prints a table of medians per request kind and setting, and each setting's cost against the first; `after` runs
 * once the table is printed, before the servers stop.
 */
export async function compareServerSettings(bench: string, settings: readonly ServerSetting[], after?: (run: ServerSettingsRun) => Promise<void>): Promise<void> {
  const seconds = envNumber("BENCH_SECONDS", 5);
  const rounds = envNumber("BENCH_ROUNDS", 3);
  const concurrency = envNumber("BENCH_CONCURRENCY", 16);
  // Enough distinct CSRs for one cell (creates here top out near 4,000/s): none is sent twice, so the server's
  // verified-CSR memo never answers; a cell that runs out fails rather than repeat one.
  const csrPool = envNumber("BENCH_CSR_POOL", seconds * 6_000);
  const clusters = new Map<string, Cluster>();
  try {
    for (const s of settings) clusters.set(s.name, await startCluster({ apiserverArgs: [...s.args] }));
    const n = clusters.get(settings[0]!.name)!.names;
    // generateName and a distinct CSR in every create: distinct objects, each signature checked.
    const csrBody = JSON.stringify(csrObject({ names: n, metadata: { generateName: "bench-" }, spec: { request: CSR_PLACEHOLDER } }));
    const kinds = [
      { name: "POST CertificateSigningRequest (durable, distinct CSRs)", method: "POST", path: `/apis/${n.certificates}/v1/certificatesigningrequests`, body: csrBody },
      { name: "GET namespace", method: "GET", path: "/api/v1/namespaces/default" },
    ];
    const rate = new Map<string, number[]>();
    const cpu = new Map<string, number[]>();
    const requests = new Map<string, number>();
    for (let round = 0; round < rounds; round++) {
      for (const kind of kinds) {
        for (const s of settings.map((_, i) => settings[(i + round) % settings.length]!)) {
          const c = clusters.get(s.name)!;
          const own = await restConfigFromConnection({ kubeconfig: c.adminConfig });
          const spec: LoadSpec = { url: c.address + kind.path, method: kind.method, tls: { ca: own.tls.ca!, cert: own.tls.cert!, key: own.tls.key! }, concurrency, seconds, ...(kind.body && { body: kind.body, distinctCsrs: csrPool }) };
          const r = await measureLoad(c.apiserver.child.pid!, spec);
          const ok = Object.entries(r.codes).filter(([code]) => code.startsWith("2")).reduce((sum, [, v]) => sum + v, 0);
          if (ok !== r.requests) throw new Error(`${kind.name} (${s.name}): not every request succeeded: ${JSON.stringify(r.codes)}`);
          requests.set(s.name, (requests.get(s.name) ?? 0) + r.requests);
          const key = `${kind.name}\t${s.name}`;
          rate.set(key, [...(rate.get(key) ?? []), r.requests / r.seconds]);
          cpu.set(key, [...(cpu.get(key) ?? []), r.serverMicros]);
        }
      }
    }
    console.log(`${bench} — ${new Date().toISOString()}, node ${process.version}, ${concurrency} connections, ${rounds} rounds × ${seconds} s per cell, medians`);
    const [base, ...others] = settings.map((s) => s.name);
    console.log(`| request | measure | ${[base, ...others].join(" | ")} | ${others.map((o) => `${o} cost`).join(" | ")} |`);
    console.log(`|---|---|${"---|".repeat(settings.length + others.length)}`);
    for (const kind of kinds) {
      for (const [measure, table, sign] of [["req/s", rate, 1], ["server CPU µs/req", cpu, -1]] as const) {
        const med = (s: string) => percentile(table.get(`${kind.name}\t${s}`)!, 50);
        const off = med(base!);
        const cost = (v: number) => `${(((off - v) / off) * 100 * sign).toFixed(1)}%`;
        console.log(`| ${kind.name} | ${measure} | ${[base!, ...others].map((s) => med(s).toFixed(0)).join(" | ")} | ${others.map((s) => cost(med(s))).join(" | ")} |`);
      }
    }
    await after?.({ clusters, requests });
  } finally {
    for (const c of clusters.values()) await c.stop();
  }
}
