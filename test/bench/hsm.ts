// Issuance through SoftHSM2 against the same CA key held in the process: certs/s and latency (p50, p99).
//
// Run with `npm run bench:hsm`. A throwaway token is initialised in a temp directory; for P-256 and RSA-2048 one CA
// key is generated, imported into the token (non-extractable) and also kept in the process, so both paths sign with
// the same key. Each path issues its own distinct, pre-parsed CSRs (P-256 keys, node-agent style subject and SANs).
// The file key signs synchronously (Issuer.issue); the token key through Issuer.issueAsync with CONCURRENCY
// signatures in flight (the token's session pool and libuv's threads run them).
import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { generateCa } from "../../src/pki/ca.js";
import { buildCsr } from "../../src/pki/csr-builder.js";
import { parseCsr } from "../../src/pki/csr.js";
import { Issuer } from "../../src/pki/issue.js";
import type { CertificateProfile, ParsedCsr } from "../../src/pki/types.js";
import { resolveUsages } from "../../src/pki/usages.js";
import { importIntoToken } from "../hsm/import-key.js";
import { inParallel } from "../fixtures/parallel.js";

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const COUNTS = { p256: Number(process.env.BENCH_P256 ?? 3000), rsa2048: Number(process.env.BENCH_RSA ?? 800) };
const MODULE = "/usr/lib/softhsm/libsofthsm2.so";
const profile: CertificateProfile = { usages: resolveUsages(["digital signature", "client auth", "server auth"]), isCa: false, includeSans: true };

function csrs(count: number, offset: number): ParsedCsr[] {
  return Array.from({ length: count }, (_, i) => {
    const n = offset + i;
    const der = buildCsr({ commonName: `system:node:node-${n}`, organizations: ["system:nodes"], dns: [`node-${n}.cluster.example`], ip: [`10.0.${(n >> 8) & 255}.${n & 255}`] }, generateKeyPairSync("ec", { namedCurve: "P-256" }));
    return parseCsr(der);
  });
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Row {
  readonly ca: string;
  readonly path: string;
  readonly count: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
}

function row(ca: string, path: string, latencies: number[], seconds: number): Row {
  latencies.sort((a, b) => a - b);
  return { ca, path, count: latencies.length, perSecond: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-hsm-"));
  try {
    mkdirSync(join(dir, "tokens"));
    writeFileSync(join(dir, "softhsm2.conf"), `directories.tokendir = ${join(dir, "tokens")}\nobjectstore.backend = file\n`);
    process.env.SOFTHSM2_CONF = join(dir, "softhsm2.conf");
    execFileSync("softhsm2-util", ["--init-token", "--free", "--label", "bench", "--pin", "1234", "--so-pin", "12345678"], { stdio: "pipe" });
    const rows: Row[] = [];
    const now = new Date();
    const validity = { notBefore: new Date(now.getTime() - 300_000), notAfter: new Date(now.getTime() + 86_400_000) };
    for (const keyType of ["p256", "rsa2048"] as const) {
      const label = keyType === "p256" ? "P-256" : "RSA-2048";
      const fileCa = (await generateCa({ commonName: `bench ${label}`, keyType, lifetimeSeconds: 86_400 * 30, now })).ca;
      const tokenCa = await importIntoToken(`pkcs11:token=bench;object=${keyType}?module-path=${MODULE}&pin-value=1234`, fileCa);
      const count = COUNTS[keyType];
      const [forFile, forToken] = [csrs(count, 0), csrs(count, count)];

      const fileIssuer = new Issuer(fileCa);
      const fileLatency: number[] = [];
      const fileStart = performance.now();
      for (const csr of forFile) {
        const t = performance.now();
        fileIssuer.issue({ csr, profile, validity });
        fileLatency.push(performance.now() - t);
      }
      rows.push(row(label, "key in the process (file)", fileLatency, (performance.now() - fileStart) / 1000));

      const tokenIssuer = new Issuer(tokenCa);
      await tokenIssuer.issueAsync({ csr: forToken[0]!, profile, validity }); // sessions opened, key looked up
      const tokenLatency: number[] = [];
      const tokenStart = performance.now();
      await inParallel(forToken, CONCURRENCY, async (csr) => {
        const t = performance.now();
        await tokenIssuer.issueAsync({ csr, profile, validity });
        tokenLatency.push(performance.now() - t);
      });
      rows.push(row(label, `SoftHSM2 token, ${CONCURRENCY} in flight`, tokenLatency, (performance.now() - tokenStart) / 1000));
    }
    const cpu = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown";
    console.log(`${new Date().toISOString()} · nproc ${os.availableParallelism()} · ${cpu} · load average ${os.loadavg()[0]!.toFixed(1)} · SoftHSM2 ${execFileSync("softhsm2-util", ["--version"]).toString().trim()}\n`);
    console.log("| CA key | path | certificates | certs/s | p50 ms | p99 ms |\n|---|---|---:|---:|---:|---:|");
    for (const r of rows) console.log(`| ${r.ca} | ${r.path} | ${r.count} | ${Math.round(r.perSecond).toLocaleString("en")} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} |`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
