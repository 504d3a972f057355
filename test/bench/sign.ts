// Issuance throughput (certificates/s) of the product's signing paths on one thread and on all cores, beside openssl speed.
//
// Run with `npm run bench:sign`. Every certificate is a full parse + CSR signature check + issuance with KU, EKU,
// SAN, SKI, AKI and BC, from 8192 CSRs on distinct P-256 keys (more than the verified-CSR memory of parseCsr holds,
// so each signature check is done for real). Rows:
// - "one thread": SigningPool.issue with nothing waiting, i.e. the calling thread (a lone CSR, `platform-ca sign`);
// - "pool": SigningPool.issue with a backlog (the signing controller in a burst, `sign` of many files), CSR bytes
//   parsed and verified on the workers;
// - "controller": SigningController.sync itself (sign-controller.ts: its cache and client are maps, so only its own
//   path is timed) with ConcurrentCSRSyncs' default of concurrent syncs and a long queue behind them, as in a burst,
//   for the built-in node-agent serving signer: requests go to the signer as bytes, several per sync, read, judged,
//   checked and signed on the pool's workers; and the same for requests this process verified before the clock started
//   (in `up`, the API server's create check), which the workers find in the shared memory of verified requests and
//   issue without a second check: that row's work is the CA signature, and it is compared with openssl's sign rate.
// Each row is measured in BENCH_WINDOWS windows (default 3) of BENCH_SECONDS (default 2) and reported as the
// median; `openssl speed` (one process, then one per core at once) runs between the windows, so both see the same machine load.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { generateKeyPairSync, sign } from "node:crypto";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { generateCa, type GeneratedCa } from "../../src/pki/ca.js";
import { encodePem } from "../../src/pki/pem.js";
import { bitString, explicit, implicitPrimitive, integer, objectIdentifier, octetString, sequence, setOf, utf8String } from "../../src/pki/der-writer.js";
import { parseCsr } from "../../src/pki/csr.js";
import { shareVerifiedMemo } from "../../src/pki/csr-signature.js";
import { nativeCrypto } from "../../src/pki/native.js";
import { SharedVerifiedMemo } from "../../src/pki/verified-memo.js";
import { OID } from "../../src/pki/oids.js";
import { SigningPool } from "../../src/pki/signing-pool.js";
import { resolveUsages } from "../../src/pki/usages.js";
import type { CertificateProfile, Validity } from "../../src/pki/types.js";
import { createBuiltinSigners } from "../../signers/builtins.js";
import { groupNames } from "../../src/api/group.js";
import type { CertificateSigningRequest } from "../../src/api/types/csr.js";
import { csrObject } from "../fixtures/csr.js";
import { DEFAULT_CONCURRENT_CSR_SYNCS } from "../../src/config/controller-manager-schema.js";
import { envNumber } from "./measure.js";
import { startController, type ControllerDriver } from "./sign-controller.js";

const SECONDS = envNumber("BENCH_SECONDS", 2);
const WINDOWS = Math.max(3, envNumber("BENCH_WINDOWS", 3));
const DISTINCT_CSRS = 8192;
const CORES = os.availableParallelism();
/** The signing controller's concurrent syncs (ConcurrentCSRSyncs' default) and the requests waiting in a burst. */
const CONTROLLER_SYNCS = DEFAULT_CONCURRENT_CSR_SYNCS;
const BURST_QUEUE = 4096;

const profile: CertificateProfile = {
  usages: resolveUsages(["digital signature", "key encipherment", "client auth", "server auth"]),
  isCa: false,
  includeSans: true,
};

/** A node-agent style CSR (subject, DNS + IP SANs) on a fresh P-256 key. */
function makeCsr(i: number): Uint8Array {
  const keys = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const rdn = (oid: string, value: string) => setOf(sequence(objectIdentifier(oid), utf8String(value)));
  const subject = sequence(rdn(OID.organizationName, "system:nodes"), rdn(OID.commonName, `system:node:node-${i}`));
  const ip = Uint8Array.of(10, (i >> 16) & 255, (i >> 8) & 255, i & 255);
  const sans = sequence(implicitPrimitive(2, Buffer.from(`node-${i}.cluster.example`)), implicitPrimitive(7, ip));
  const extensionRequest = sequence(objectIdentifier(OID.extensionRequest), setOf(sequence(sequence(objectIdentifier(OID.subjectAltName), octetString(sans)))));
  const info = sequence(integer(0), subject, new Uint8Array(keys.publicKey.export({ type: "spki", format: "der" })), explicit(0, extensionRequest));
  return sequence(info, sequence(objectIdentifier(OID.ecdsaWithSha256)), bitString(sign("sha256", info, keys.privateKey)));
}

/**
 * Keeps `window` issuances outstanding for `seconds` (1: one at a time): completed certificates per second of wall
 * time, and per second of CPU time of this process (all its threads).
 */
async function rate(seconds: number, window: number, once: (i: number, waiting: number) => Promise<unknown>): Promise<Measured> {
  let next = 0;
  let done = 0;
  let inFlight = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;
  await new Promise<void>((resolve, reject) => {
    const submit = () => {
      while (inFlight < window && performance.now() < end) {
        inFlight += 1;
        once(next++, window - inFlight).then(finish, reject);
      }
    };
    const finish = () => {
      inFlight -= 1;
      done += 1;
      if (performance.now() < end) submit();
      else if (inFlight === 0) resolve();
    };
    submit();
  });
  const used = process.cpuUsage(cpu);
  return { wall: done / ((performance.now() - start) / 1000), cpu: done / ((used.user + used.system) / 1e6) };
}

interface Measured {
  readonly wall: number;
  readonly cpu: number;
}

interface Speed {
  readonly ecdsaSign: number;
  readonly ecdsaVerify: number;
  readonly rsaSign: number;
}

/**
 * `openssl speed -elapsed` (wall time, as the rows are measured; without it openssl divides by its own CPU time and
 * a busy machine does not show) in `processes` processes at once, rates summed. (`-multi` is not used: its children
 * reported a seventh of a lone process's rate on this machine.)
 */
async function opensslSpeed(processes: number, elapsed = true): Promise<Speed> {
  const args = ["speed", ...(elapsed ? ["-elapsed"] : []), "-seconds", "1", "ecdsap256", "rsa2048"];
  const runs = await Promise.all(Array.from({ length: processes }, () => run("openssl", args)));
  const speeds = runs.map(readSpeed);
  return { ecdsaSign: sum(speeds.map((s) => s.ecdsaSign)), ecdsaVerify: sum(speeds.map((s) => s.ecdsaVerify)), rsaSign: sum(speeds.map((s) => s.rsaSign)) };
}

const run = promisify(execFile);
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

function readSpeed({ stdout: out }: { stdout: string }): Speed {
  const rsa = /^rsa 2048 bits\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)/m.exec(out);
  const ec = /^\s*256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)/m.exec(out);
  if (!rsa || !ec) throw new Error(`cannot read openssl speed output:\n${out}`);
  return { rsaSign: Number(rsa[1]), ecdsaSign: Number(ec[1]), ecdsaVerify: Number(ec[2]) };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ceiling = (a: number, b: number) => 1 / (1 / a + 1 / b);
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const pct = (n: number) => `${(n * 100).toFixed(0)}%`;

async function main(): Promise<void> {
  console.log(`# bench:sign ${new Date().toISOString()}`);
  console.log(`node ${process.version}, ${CORES} cores available (${os.cpus()[0]?.model ?? "unknown CPU"}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log(`crypto: ${nativeCrypto ? "native accelerator (native/crypto.c)" : "node:crypto"}; ${WINDOWS} windows of ${SECONDS} s per row, medians`);
  const csrs = Array.from({ length: DISTINCT_CSRS }, (_, i) => makeCsr(i));
  // The controller's requests as it sees them: approved objects with the PEM text base64-encoded, for the node-agent
  // serving signer. A set of their own, which no other row verified on this thread (the verified-request memory would
  // send them the checked way).
  const names = groupNames();
  const approved = [{ type: "Approved" as const, status: "True" as const, reason: "Bench", message: "bench", lastUpdateTime: "2026-01-01T00:00:00Z" }];
  const requestObjects = (ders: readonly Uint8Array[]) =>
    ders.map((der) => csrObject({ names, signerName: names.signers.nodeagentServing, usages: ["digital signature", "key encipherment", "server auth"], conditions: approved, request: encodePem("CERTIFICATE REQUEST", der) }));
  const unchecked = requestObjects(Array.from({ length: DISTINCT_CSRS }, (_, i) => makeCsr(DISTINCT_CSRS + i)));
  // A third set, verified now into a memory of verified requests that only the pool of its row reads (the other rows'
  // requests are never in it): as the API server's create check in `up` leaves them for the controllers' thread.
  const checkedDers = Array.from({ length: DISTINCT_CSRS }, (_, i) => makeCsr(2 * DISTINCT_CSRS + i));
  const memo = new SharedVerifiedMemo();
  shareVerifiedMemo(memo);
  for (const der of checkedDers) parseCsr(der);
  shareVerifiedMemo(undefined);
  const checked = requestObjects(checkedDers);
  let submitted = 0;
  /** Request i of `set` as a new object (name and uid of its own, as every request of a burst is). */
  const fresh = (set: readonly CertificateSigningRequest[], i: number): CertificateSigningRequest => {
    const name = `bench-${submitted++}`;
    return { ...set[i % DISTINCT_CSRS]!, metadata: { name, uid: name } };
  };
  const now = new Date();
  const cas: Record<string, GeneratedCa> = {
    "P-256": await generateCa({ commonName: "bench P-256 CA", keyType: "p256", lifetimeSeconds: 365 * 86_400, now }),
    "RSA-2048": await generateCa({ commonName: "bench RSA-2048 CA", keyType: "rsa2048", lifetimeSeconds: 365 * 86_400, now }),
  };
  const validity: Validity = { notBefore: new Date(now.getTime() - 300_000), notAfter: new Date(now.getTime() + 86_400_000) };
  const pool = new SigningPool();
  const checkedPool = new SigningPool({ verifiedMemo: memo });
  const window = Math.max(512, pool.workers * 64 * 4);
  const controllers: ControllerDriver[] = [];
  const rows = await Promise.all(Object.entries(cas).map(async ([name, { ca }]) => {
    const signer = createBuiltinSigners({ ca, groupSuffix: names.suffix }).find((s) => s.signerName === names.signers.nodeagentServing)!;
    const start = (p: SigningPool) => startController({ signer, pool: p, workers: CONTROLLER_SYNCS }).then((c) => (controllers.push(c), c));
    const [bytes, verifiedBefore] = await Promise.all([start(pool), start(checkedPool)]);
    return [
      { ca: name, mode: "one thread (nothing waiting)", cores: 1, run: () => rate(SECONDS, 1, (i) => pool.issue({ ca, csr: csrs[i % DISTINCT_CSRS]!, profile, validity })) },
      { ca: name, mode: `pool, ${pool.workers} workers, CSR verified on the workers`, cores: CORES, run: () => rate(SECONDS, window, (i, waiting) => pool.issue({ ca, csr: csrs[i % DISTINCT_CSRS]!, profile, validity }, waiting)) },
      // As in a burst: a long queue behind the controller's syncs.
      { ca: name, mode: `controller (SigningController.sync, ${CONTROLLER_SYNCS} syncs): requests as bytes, read, judged, checked and signed on the pool`, cores: CORES, run: () => rate(SECONDS, BURST_QUEUE, (i) => bytes.submit(fresh(unchecked, i))) },
      { ca: name, mode: "controller, requests verified before in this process (in `up`, at create): signed on the pool without a second check", cores: CORES, run: () => rate(SECONDS, BURST_QUEUE, (i) => verifiedBefore.submit(fresh(checked, i))) },
    ].map((r) => ({ ...r, rates: [] as Measured[] }));
  })).then((perCa) => perCa.flat());
  const speeds: { one: Speed; all: Speed; cpu: Speed }[] = [];
  for (const r of rows) await r.run(); // warm-up: workers started, CAs loaded, code optimised
  for (let w = 0; w < WINDOWS; w++) {
    for (const r of rows) r.rates.push(await r.run());
    speeds.push({ one: await opensslSpeed(1), all: await opensslSpeed(CORES), cpu: await opensslSpeed(1, false) });
  }
  await Promise.all(controllers.map((c) => c.stop()));
  await Promise.all([pool.close(), checkedPool.close()]);

  const speed = (pick: (s: (typeof speeds)[number]) => Speed): Speed => ({
    ecdsaSign: median(speeds.map((s) => pick(s).ecdsaSign)),
    ecdsaVerify: median(speeds.map((s) => pick(s).ecdsaVerify)),
    rsaSign: median(speeds.map((s) => pick(s).rsaSign)),
  });
  const [one, all, cpu] = [speed((s) => s.one), speed((s) => s.all), speed((s) => s.cpu)];
  const line = (label: string, s: Speed) => `${label}: ECDSA P-256 sign ${fmt(s.ecdsaSign)}/s, verify ${fmt(s.ecdsaVerify)}/s; RSA-2048 sign ${fmt(s.rsaSign)}/s`;
  console.log(`\nopenssl speed, medians of the ${WINDOWS} runs between the windows:`);
  console.log(`- ${line("1 process, wall time (-elapsed)", one)}\n- ${line(`${CORES} processes at once, wall time, summed`, all)}\n- ${line("1 process, per CPU second (openssl's default)", cpu)}`);
  console.log("ceiling = the same cores doing only the CA signature and the CSR (P-256) verification at openssl speed: 1/(1/sign + 1/verify)");
  console.log("per CPU second: certificates per second of CPU used by this process (all threads) against openssl per CPU second: the share of");
  console.log("each core's work that is the two openssl operations, whatever the machine's load.");
  console.log("The row of requests verified before the clock started (as the API server's create check does in `up`) does the CA");
  console.log("signature only: read it against openssl's sign rate; its share of the sign+verify ceiling is not a like-for-like figure.");
  console.log("\n| CA | mode | certs/s (median) | windows | vs openssl CA sign/s, same cores | vs sign+verify ceiling, same cores | certs per CPU second | vs ceiling per CPU second |\n|---|---|---:|---|---:|---:|---:|---:|");
  for (const r of rows) {
    const s = r.cores === 1 ? one : all;
    const signRate = (x: Speed) => (r.ca === "P-256" ? x.ecdsaSign : x.rsaSign);
    const wall = median(r.rates.map((x) => x.wall));
    const perCpu = median(r.rates.map((x) => x.cpu));
    const cells = [fmt(wall), r.rates.map((x) => fmt(x.wall)).join(", "), pct(wall / signRate(s)), pct(wall / ceiling(signRate(s), s.ecdsaVerify)), fmt(perCpu), pct(perCpu / ceiling(signRate(cpu), cpu.ecdsaVerify))];
    console.log(`| ${r.ca} | ${r.mode} | ${cells.join(" | ")} |`);
  }
  // The floor behind the controller rows, in CPU time per certificate: what the two openssl operations take, what the
  // pool adds to them, and what the controller adds to the pool (its own thread, and the rules read on the workers).
  console.log("\nCPU per certificate (µs, from the per-CPU-second medians): openssl's operations / pool row / controller row (bytes);");
  console.log("what the target allows for everything:");
  for (const [ca, target] of [["P-256", 0.9], ["RSA-2048", 0.8]] as const) {
    const us = (mode: string) => 1e6 / median(rows.find((r) => r.ca === ca && r.mode.startsWith(mode))!.rates.map((x) => x.cpu));
    const signPerCpu = ca === "P-256" ? cpu.ecdsaSign : cpu.rsaSign;
    const operations = 1e6 / ceiling(signPerCpu, cpu.ecdsaVerify);
    // P-256's target is a share of the sign+verify ceiling; RSA-2048's, of the CA signature alone.
    const allowed = 1e6 / (target * (ca === "P-256" ? ceiling(signPerCpu, cpu.ecdsaVerify) : signPerCpu));
    const [pool, controller] = [us("pool"), us("controller (")];
    const f = (n: number) => n.toFixed(1);
    console.log(`- ${ca}: ${f(operations)} / ${f(pool)} (+${f(pool - operations)}) / ${f(controller)} (+${f(controller - pool)} beyond the pool); ${pct(target)} allows ${f(allowed)}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
