// Benchmark: a CA and 20 leaf certificates with `platform-ca dev-certs` (one process) vs mkcert (20 invocations).
//
// Wall time of whole processes, fresh output directory per run, cases interleaved so machine load hits them alike;
// the median of BENCH_REPS runs (default 5). Run: `npm run bench:dev-certs`.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";

const CLI = fileURLToPath(new URL("../../src/cli/platform-ca.js", import.meta.url));
const REPS = Number(process.env.BENCH_REPS ?? 5);
const LEAVES = 20;
const names = Array.from({ length: LEAVES }, (_, i) => `svc-${i + 1}.dev.test`);
const root = mkdtempSync(join(tmpdir(), "bench-dev-certs-"));

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

/** Runs the commands one after the other and returns the wall time in milliseconds; any failure aborts the benchmark. */
function timed(commands: readonly { cmd: string; args: readonly string[]; env?: NodeJS.ProcessEnv; cwd?: string }[]): number {
  const start = process.hrtime.bigint();
  for (const c of commands) {
    const r = spawnSync(c.cmd, c.args, { env: { ...process.env, ...c.env }, cwd: c.cwd ?? root, stdio: ["ignore", "ignore", "pipe"] });
    if (r.status !== 0) throw new Error(`${c.cmd} ${c.args.join(" ")} failed: ${r.stderr?.toString() ?? r.error}`);
  }
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function verify(ca: string, cert: string): void {
  execFileSync("openssl", ["verify", "-CAfile", ca, cert], { stdio: "ignore" });
}

const hasMkcert = spawnSync("mkcert", ["-version"]).status === 0;
const p256 = manifest("pki-p256.yaml", "p256", "p256");
const rsa = manifest("pki-rsa.yaml", "rsa3072", "rsa2048");

type Case = { readonly label: string; readonly run: (dir: string) => number; readonly check: (dir: string) => void };
const platformCase = (label: string, file: string): Case => ({
  label,
  run: (dir) => timed([{ cmd: process.execPath, args: [CLI, "dev-certs", "--manifest", file, "--out", dir] }]),
  check: (dir) => verify(join(dir, "ca.crt"), join(dir, `svc-${LEAVES}.crt`)),
});
const mkcertCase = (label: string, extra: readonly string[], batch: boolean): Case => ({
  label,
  run: (dir) => {
    const env = { CAROOT: join(dir, "caroot") };
    if (batch) return timed([{ cmd: "mkcert", args: [...extra, ...names], env, cwd: dir }]);
    return timed(names.map((n, i) => ({ cmd: "mkcert", args: [...extra, "-cert-file", `svc-${i + 1}.pem`, "-key-file", `svc-${i + 1}-key.pem`, n], env, cwd: dir })));
  },
  check: (dir) => verify(join(dir, "caroot/rootCA.pem"), join(dir, batch ? `${names[0]}+${LEAVES - 1}.pem` : `svc-${LEAVES}.pem`)),
});

const cases: Case[] = [
  platformCase("platform-ca dev-certs: P-256 CA + 20 P-256 leaves (defaults), one process", p256),
  platformCase("platform-ca dev-certs: RSA-3072 CA + 20 RSA-2048 leaves (mkcert's key types), one process", rsa),
  ...(hasMkcert
    ? [
        mkcertCase("mkcert: RSA-3072 CA + 20 RSA-2048 leaves, 20 invocations", [], false),
        mkcertCase("mkcert -ecdsa: RSA-3072 CA + 20 P-256 leaves, 20 invocations", ["-ecdsa"], false),
        mkcertCase("mkcert: RSA-3072 CA + one RSA-2048 leaf with 20 names, 1 invocation", [], true),
      ]
    : []),
];

const times = cases.map(() => [] as number[]);
const rerun: number[] = [];
for (let rep = 0; rep < REPS; rep++) {
  cases.forEach((c, i) => {
    const dir = join(root, `run-${rep}-${i}`);
    mkdirSync(dir);
    times[i]!.push(c.run(dir));
    c.check(dir);
    // The idempotent case: the same command again over its own output keeps everything.
    if (i === 0) rerun.push(c.run(dir));
  });
}
rmSync(root, { recursive: true, force: true });

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const ms = (x: number): string => `${Math.round(x)} ms`;
const medians = times.map(median);

console.log(`dev-certs benchmark: median of ${REPS} runs, wall time of whole processes, node ${process.version}\n`);
console.log("| case | median | runs |");
console.log("|---|---|---|");
cases.forEach((c, i) => console.log(`| ${c.label} | ${ms(medians[i]!)} | ${times[i]!.map(ms).join(", ")} |`));
console.log(`| platform-ca dev-certs again over its output (all kept) | ${ms(median(rerun))} | ${rerun.map(ms).join(", ")} |`);
if (hasMkcert) {
  const mk = medians[2]!;
  console.log(`\nratio to mkcert ×20 (target ≤ 0.5): P-256 defaults ${(medians[0]! / mk).toFixed(2)}, RSA key types ${(medians[1]! / mk).toFixed(2)}`);
  console.log(`ratio to mkcert -ecdsa ×20: ${(medians[0]! / medians[3]!).toFixed(2)}; to one mkcert invocation with 20 names: ${(medians[0]! / medians[4]!).toFixed(2)}`);
} else {
  console.log("\nmkcert is not installed: no comparison (Debian package mkcert)");
}
