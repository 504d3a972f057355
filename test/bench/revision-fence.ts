// bench:revision-fence — `platform-ca storage bump-revision` on a one-member TLS etcd (Debian's /usr/bin/etcd, loopback)
// against its peer, the shell loop of one `etcdctl put` per revision it replaces, rounds interleaved: seconds for
// BENCH_FENCE_REVISIONS revisions, and the loop's ms per revision over BENCH_LOOP_PUTS puts, extrapolated.
import { execFileSync } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { startEtcd } from "../fixtures/etcd.js";
import { envNumber, percentile } from "./measure.js";
import { PLATFORM_CA as CLI } from "../fixtures/repo.js";

const REVISIONS = envNumber("BENCH_FENCE_REVISIONS", 100_000);
const LOOP_PUTS = envNumber("BENCH_LOOP_PUTS", 200);
const ROUNDS = envNumber("BENCH_ROUNDS", 2);

async function main(): Promise<void> {
  const load = loadavg()[0]!.toFixed(1);
  const etcd = await startEtcd({ tls: true });
  const tls = etcd.tls!;
  const endpoint = etcd.endpoints[0]!;
  const fenceSeconds: number[] = [];
  const loopMsPerRevision: number[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      let t = performance.now();
      execFileSync(process.execPath, [CLI, "storage", "bump-revision", "--by", String(REVISIONS), "--etcd-servers", endpoint, "--etcd-cafile", tls.caFile, "--etcd-certfile", tls.certFile, "--etcd-keyfile", tls.keyFile], { stdio: "ignore" });
      fenceSeconds.push((performance.now() - t) / 1000);
      // The loop as docs/operations.md had it: one etcdctl process per revision.
      const loop = `for i in $(seq ${LOOP_PUTS}); do ETCDCTL_API=3 etcdctl --endpoints ${endpoint} --cacert ${tls.caFile} --cert ${tls.certFile} --key ${tls.keyFile} put bench-bump "" > /dev/null; done`;
      t = performance.now();
      execFileSync("bash", ["-c", loop], { stdio: "ignore" });
      loopMsPerRevision.push((performance.now() - t) / LOOP_PUTS);
    }
  } finally {
    await etcd.stop();
  }
  const fence = percentile(fenceSeconds, 50);
  const loop = percentile(loopMsPerRevision, 50);
  const machine = `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}, node ${process.version}, load average ${load} at start`;
  process.stdout.write(`${JSON.stringify({
    date: new Date().toISOString(),
    machine,
    revisions: REVISIONS,
    bumpRevisionSeconds: Math.round(fence * 10) / 10,
    bumpRevisionRounds: fenceSeconds.map((s) => Math.round(s * 10) / 10),
    loopMsPerRevision: Math.round(loop * 10) / 10,
    loopSecondsExtrapolated: Math.round((loop * REVISIONS) / 1000),
    speedup: Math.round((loop * REVISIONS) / 1000 / fence),
  }, null, 2)}\n`);
}

await main();
