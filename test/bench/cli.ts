// Benchmark: start-up of the command-line tools, wall time of whole processes beside `node -e 0` and `cfssl sign`.
//
// Run with `npm run bench:cli`. Each case runs BENCH_REPS times (default 15, at least 10), the cases interleaved so
// machine load hits them alike; medians are reported. `platform-ca sign` signs one openssl-made P-256 CSR with a
// P-256 CA, as `cfssl sign -ca ca.pem -ca-key ca-key.pem csr.pem` does. "npx" runs the bin from a project that has
// it in node_modules/.bin, as a user of the package types it. `platformctl get` lists CSRs of a local
// `platform-ca apiserver --insecure-local`.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { envNumber } from "./measure.js";
import { startServer, stopServer } from "./insecure-server.js";
import { median, requireCommands, timeProcesses, type ProcessTime } from "./process-time.js";
import { PLATFORM_CA, PLATFORMCTL } from "../fixtures/repo.js";

const REPS = Math.max(10, envNumber("BENCH_REPS", 15));
requireCommands({ openssl: "openssl", cfssl: "golang-cfssl", "/usr/bin/time": "time" });
const dir = mkdtempSync(join(os.tmpdir(), "bench-cli-"));
const file = (name: string) => join(dir, name);

const openssl = (args: readonly string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca-key.pem"]);
openssl(["req", "-x509", "-new", "-key", "ca-key.pem", "-subj", "/CN=bench CA", "-days", "30", "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "key.pem", "-subj", "/CN=alice", "-out", "csr.pem"]);

// A project that depends on the package: its bin linked into node_modules/.bin, where npx finds it.
const project = file("project");
mkdirSync(join(project, "node_modules/.bin"), { recursive: true });
writeFileSync(join(project, "package.json"), '{ "name": "bench-cli-project", "private": true }\n');
symlinkSync(PLATFORM_CA, join(project, "node_modules/.bin/platform-ca"));

const server = await startServer(file("data"));
writeFileSync(file("config.yaml"), `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "${server.base}"}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n`);

const signArgs = ["sign", "--signer-name", "platform.io/apiserver-client", "--usages", "digital signature,client auth", "--csr", "csr.pem", "--ca-cert", "ca.pem", "--ca-key", "ca-key.pem"];
const cases: { readonly label: string; readonly cmd: string; readonly args: readonly string[]; readonly cwd?: string }[] = [
  { label: "node -e 0", cmd: process.execPath, args: ["-e", "0"] },
  { label: "platform-ca sign (node dist/src/cli/platform-ca.js, what the bin runs)", cmd: process.execPath, args: [PLATFORM_CA, ...signArgs] },
  { label: "npx platform-ca sign (bin in the project's node_modules/.bin)", cmd: "npx", args: ["--no-install", "platform-ca", ...signArgs.map((a) => (a.endsWith(".pem") ? file(a) : a))], cwd: project },
  { label: "platform-ca --version", cmd: process.execPath, args: [PLATFORM_CA, "--version"] },
  { label: "platformctl version --client", cmd: process.execPath, args: [PLATFORMCTL, "version", "--client"] },
  { label: "platformctl get csr (local insecure API server)", cmd: process.execPath, args: [PLATFORMCTL, "--platformconfig", file("config.yaml"), "get", "csr"] },
  { label: "cfssl sign -ca ca.pem -ca-key ca-key.pem csr.pem", cmd: "cfssl", args: ["sign", "-ca", "ca.pem", "-ca-key", "ca-key.pem", "csr.pem"] },
];

const run = (c: (typeof cases)[number]) => timeProcesses([{ cmd: c.cmd, args: c.args, cwd: c.cwd ?? dir }]);
const times = cases.map(() => [] as ProcessTime[]);
try {
  cases.forEach(run); // warm-up: file cache, npx's own start
  for (let rep = 0; rep < REPS; rep++) cases.forEach((c, i) => times[i]!.push(run(c)));
} finally {
  await stopServer(server.child);
  rmSync(dir, { recursive: true, force: true });
}

const medians = times.map((t) => median(t.map((x) => x.wall)));
const cpu = times.map((t) => median(t.map((x) => x.cpu)));
const node = medians[0]!;
console.log(`# bench:cli ${new Date().toISOString()}: median wall time of ${REPS} runs each, interleaved`);
console.log(`node ${process.version}, ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? "unknown CPU"}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}\n`);
console.log("| command | wall (median) | × node -e 0 | wall min – max | CPU (median) | CPU × node -e 0 |\n|---|---:|---:|---|---:|---:|");
cases.forEach((c, i) => {
  const walls = times[i]!.map((x) => x.wall);
  const cells = [`${medians[i]!.toFixed(0)} ms`, (medians[i]! / node).toFixed(2), `${Math.min(...walls).toFixed(0)} – ${Math.max(...walls).toFixed(0)} ms`, `${cpu[i]!.toFixed(0)} ms`, (cpu[i]! / cpu[0]!).toFixed(2)];
  console.log(`| ${c.label} | ${cells.join(" | ")} |`);
});
console.log(`\nplatform-ca sign / node -e 0 = ${(medians[1]! / node).toFixed(2)} wall, ${(cpu[1]! / cpu[0]!).toFixed(2)} CPU (target ≤ 2 wall); / cfssl sign = ${(medians[1]! / medians[6]!).toFixed(1)} wall`);
