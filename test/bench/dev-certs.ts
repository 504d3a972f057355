// Benchmark: a CA and 20 leaf certificates with `platform-ca dev-certs` (one process) vs mkcert (20 invocations), like with like.
//
// RSA (RSA-3072 CA, RSA-2048 leaves: mkcert's key types) against `mkcert host` ×20, P-256 CA and leaves against
// `mkcert -ecdsa host` ×20 (mkcert's CA stays RSA-3072), each mkcert run with CAROOT set and a fresh directory, as a
// user runs it. platform-ca is started the ways a user types it: the `platform-ca` bin (node running
// dist/src/cli/platform-ca.js) and `npx platform-ca` from a project that has the bin in node_modules/.bin.
// Wall time of whole processes and their CPU (user + system, from /usr/bin/time), cases interleaved so machine load
// hits them alike; the median of BENCH_REPS runs (default 3). Run: `npm run bench:dev-certs`.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { envNumber } from "./measure.js";
import { median, requireCommands, timeProcesses, type ProcessTime } from "./process-time.js";
import { PLATFORM_CA as CLI } from "../fixtures/repo.js";

const REPS = envNumber("BENCH_REPS", 3);
requireCommands({ mkcert: "mkcert", "/usr/bin/time": "time" });
const LEAVES = 20;
const names = Array.from({ length: LEAVES }, (_, i) => `svc-${i + 1}.dev.test`);
const root = mkdtempSync(join(os.tmpdir(), "bench-dev-certs-"));

const project = join(root, "project");
mkdirSync(join(project, "node_modules/.bin"), { recursive: true });
writeFileSync(join(project, "package.json"), '{ "name": "bench-dev-certs-project", "private": true }\n');
symlinkSync(CLI, join(project, "node_modules/.bin/platform-ca"));

function manifest(file: string, caKey: string, leafKey: string): string {
  const path = join(root, file);
  writeFileSync(path, stringify({
    version: 1,
    defaults: { keyType: leafKey },
    cas: [{ name: "ca", keyType: caKey }],
    certificates: names.map((dns, i) => ({ name: `svc-${i + 1}`, kind: "server", dns: [dns] })),
  }));
  return path;
}

const verify = (ca: string, cert: string) => execFileSync("openssl", ["verify", "-CAfile", ca, cert], { stdio: "ignore" });

type Case = { readonly label: string; readonly run: (dir: string) => ProcessTime; readonly check: (dir: string) => void };
const platformCase = (label: string, file: string, npx: boolean): Case => ({
  label,
  run: (dir) => timeProcesses([npx
    ? { cmd: "npx", args: ["--no-install", "platform-ca", "dev-certs", "--manifest", file, "--out", dir], cwd: project }
    : { cmd: process.execPath, args: [CLI, "dev-certs", "--manifest", file, "--out", dir], cwd: dir }]),
  check: (dir) => verify(join(dir, "ca.crt"), join(dir, `svc-${LEAVES}.crt`)),
});
const mkcertCase = (label: string, extra: readonly string[]): Case => ({
  label,
  run: (dir) => timeProcesses(names.map((n) => ({ cmd: "mkcert", args: [...extra, n], env: { CAROOT: join(dir, "caroot") }, cwd: dir }))),
  check: (dir) => verify(join(dir, "caroot/rootCA.pem"), join(dir, `${names[LEAVES - 1]}.pem`)),
});

if (spawnSync("mkcert", ["-version"]).status !== 0) throw new Error("mkcert is not installed (Debian package mkcert): nothing to compare with");
const rsa = manifest("pki-rsa.yaml", "rsa3072", "rsa2048");
const p256 = manifest("pki-p256.yaml", "p256", "p256");
const cases: Case[] = [
  platformCase("platform-ca dev-certs (bin): RSA-3072 CA + 20 RSA-2048 leaves", rsa, false),
  platformCase("npx platform-ca dev-certs: RSA-3072 CA + 20 RSA-2048 leaves", rsa, true),
  mkcertCase("mkcert host ×20: RSA-3072 CA + 20 RSA-2048 leaves", []),
  platformCase("platform-ca dev-certs (bin): P-256 CA + 20 P-256 leaves", p256, false),
  platformCase("npx platform-ca dev-certs: P-256 CA + 20 P-256 leaves", p256, true),
  mkcertCase("mkcert -ecdsa host ×20: RSA-3072 CA + 20 P-256 leaves", ["-ecdsa"]),
];

const results = cases.map(() => [] as ProcessTime[]);
try {
  for (let rep = 0; rep < REPS; rep++) {
    cases.forEach((c, i) => {
      const dir = join(root, `run-${rep}-${i}`);
      mkdirSync(dir);
      results[i]!.push(c.run(dir));
      c.check(dir);
    });
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}

const wall = results.map((r) => median(r.map((x) => x.wall)));
const cpu = results.map((r) => median(r.map((x) => x.cpu)));
const ms = (x: number): string => `${Math.round(x)} ms`;
console.log(`# bench:dev-certs ${new Date().toISOString()}: median of ${REPS} runs, whole processes, interleaved`);
console.log(`node ${process.version}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "unknown CPU"}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}\n`);
console.log("| case | wall (median) | CPU (median) | wall of each run |\n|---|---:|---:|---|");
cases.forEach((c, i) => console.log(`| ${c.label} | ${ms(wall[i]!)} | ${ms(cpu[i]!)} | ${results[i]!.map((r) => ms(r.wall)).join(", ")} |`));
const ratio = (a: number, b: number) => `${(wall[a]! / wall[b]!).toFixed(2)} (CPU ${(cpu[a]! / cpu[b]!).toFixed(2)})`;
console.log(`\nRSA vs mkcert (target ≤ 0.5): bin ${ratio(0, 2)}, npx ${ratio(1, 2)}`);
console.log(`P-256 vs mkcert -ecdsa (target ≤ 1.0): bin ${ratio(3, 5)}, npx ${ratio(4, 5)}`);
