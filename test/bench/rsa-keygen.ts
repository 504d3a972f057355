// Benchmark: CPU per RSA-2048 and RSA-3072 key: the native generator vs node's generateKeyPair vs `openssl genpkey`.
//
// One key at a time, the three generators interleaved key by key so machine load hits them alike; BENCH_KEYS keys of
// each (default 30). In-process generators are measured with process.cpuUsage around one awaited key (all threads, so
// the libuv pool's work counts); "ours" is generateKeyPair with the addon, JWK import and the key check included.
// openssl is a whole process (its start, a few ms, included), timed by /usr/bin/time to 10 ms.
// RSA key generation time varies a lot from key to key (where the next prime lies): medians, means (what a batch of
// keys costs) and 10th–90th percentiles.
// Run: `npm run bench:rsa-keygen`.
import { generateKeyPair as generateKeyPairCallback } from "node:crypto";
import os from "node:os";
import { promisify } from "node:util";
import { generateKeyPair, type KeyType } from "../../src/pki/keys.js";
import { nativeCrypto } from "../../src/pki/native.js";
import { envNumber, percentile } from "./measure.js";
import { median, timeProcesses } from "./process-time.js";

const KEYS = envNumber("BENCH_KEYS", 30);
const nodeGenerate = promisify(generateKeyPairCallback);
if (nativeCrypto?.generateRsaKey === undefined) throw new Error("the native addon with generateRsaKey is not built: npm run build:native");

async function cpuOf(work: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const openssl = (args: readonly string[]) => async () => timeProcesses([{ cmd: "openssl", args: ["genpkey", ...args, "-out", "/dev/null"], cwd: os.tmpdir() }]).cpu;
type Case = { readonly label: string; readonly run: () => Promise<number> };
const casesFor = (bits: 2048 | 3072): Case[] => [
  { label: `ours: generateKeyPair("rsa${bits}"), native`, run: () => cpuOf(() => generateKeyPair(`rsa${bits}` as KeyType)) },
  { label: `node: generateKeyPair("rsa", ${bits})`, run: () => cpuOf(() => nodeGenerate("rsa", { modulusLength: bits, publicExponent: 0x10001 })) },
  { label: `openssl genpkey rsa_keygen_bits:${bits} (process)`, run: openssl(["-algorithm", "RSA", "-pkeyopt", `rsa_keygen_bits:${bits}`]) },
];
const cases = [...casesFor(2048), ...casesFor(3072)];

const samples = cases.map(() => [] as number[]);
for (let i = 0; i < KEYS; i++) for (const [c, kase] of cases.entries()) samples[c]!.push(await kase.run());

const ms = (x: number): string => (x < 100 ? x.toFixed(1) : x.toFixed(0));
console.log(`# bench:rsa-keygen ${new Date().toISOString()}: CPU ms per key, ${KEYS} keys each, interleaved`);
console.log(`node ${process.version}, OpenSSL ${process.versions.openssl}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "unknown CPU"}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}\n`);
console.log("| generator | median | mean | p10–p90 | min–max |\n|---|---:|---:|---:|---:|");
cases.forEach((c, i) => {
  const s = samples[i]!;
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  console.log(`| ${c.label} | ${ms(median(s))} | ${ms(mean)} | ${ms(percentile(s, 10))}–${ms(percentile(s, 90))} | ${ms(Math.min(...s))}–${ms(Math.max(...s))} |`);
});
const ratio = (a: number, b: number) => (median(samples[a]!) / median(samples[b]!)).toFixed(2);
console.log(`\nmedian CPU, ours vs node: RSA-2048 ${ratio(0, 1)}, RSA-3072 ${ratio(3, 4)}; ours vs openssl genpkey: RSA-2048 ${ratio(0, 2)}, RSA-3072 ${ratio(3, 5)}`);
