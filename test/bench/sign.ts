// Issuance throughput (certificates/s) for P-256 and RSA-2048 CAs, in-process and on worker threads, next to openssl speed.
//
// Run with `npm run bench:sign`. Every certificate is a full parse + CSR signature check + issuance with KU, EKU,
// SAN, SKI, AKI and BC. The CSRs (8192 on distinct P-256 keys; 4096 on 16 RSA keys) outnumber the verified-CSR
// cache of parseCsr, so each signature check is done for real. Pool rows report the best of two windows of
// BENCH_SECONDS (default 3).
import { execFileSync } from "node:child_process";
import { createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { generateCa, type GeneratedCa } from "../../src/pki/ca.js";
import { parseCsr } from "../../src/pki/csr.js";
import { bitString, DER_NULL, explicit, implicitPrimitive, integer, objectIdentifier, octetString, sequence, setOf, utf8String } from "../../src/pki/der-writer.js";
import { Issuer } from "../../src/pki/issue.js";
import { nativeCrypto } from "../../src/pki/native.js";
import { OID } from "../../src/pki/oids.js";
import { SigningPool } from "./pool/pool.js";
import { resolveUsages } from "../../src/pki/usages.js";
import type { CertificateProfile, Validity } from "../../src/pki/types.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const DISTINCT_CSRS = 8192;
const ALL = os.availableParallelism();

const profile: CertificateProfile = {
  usages: resolveUsages(["digital signature", "key encipherment", "client auth", "server auth"]),
  isCa: false,
  includeSans: true,
};

/** A node-agent style CSR (subject, DNS + IP SANs): by default on a fresh P-256 key, else on the given RSA key. */
function makeCsr(i: number, rsaKey?: KeyObject): Uint8Array {
  const keys = rsaKey ? { privateKey: rsaKey, publicKey: createPublicKey(rsaKey) } : generateKeyPairSync("ec", { namedCurve: "P-256" });
  const rdn = (oid: string, value: string) => setOf(sequence(objectIdentifier(oid), utf8String(value)));
  const subject = sequence(rdn(OID.organizationName, "system:nodes"), rdn(OID.commonName, `system:node:node-${i}`));
  const ip = Uint8Array.of(10, (i >> 16) & 255, (i >> 8) & 255, i & 255);
  const sans = sequence(implicitPrimitive(2, Buffer.from(`node-${i}.cluster.example`)), implicitPrimitive(7, ip));
  const extensionRequest = sequence(objectIdentifier(OID.extensionRequest), setOf(sequence(sequence(objectIdentifier(OID.subjectAltName), octetString(sans)))));
  const info = sequence(integer(0), subject, new Uint8Array(keys.publicKey.export({ type: "spki", format: "der" })), explicit(0, extensionRequest));
  const algorithm = rsaKey ? sequence(objectIdentifier(OID.sha256WithRsa), DER_NULL) : sequence(objectIdentifier(OID.ecdsaWithSha256));
  return sequence(info, algorithm, bitString(sign("sha256", info, keys.privateKey)));
}

// The measured loop continues the warm-up's index sequence, so no CSR repeats within the verified-CSR cache.
function perOp(iterations: number, fn: (i: number) => void): number {
  const warm = Math.min(iterations, 500);
  for (let i = 0; i < warm; i++) fn(i);
  const start = performance.now();
  for (let i = warm; i < warm + iterations; i++) fn(i);
  return ((performance.now() - start) * 1000) / iterations;
}

/** Keeps the pool saturated for SECONDS and counts completed certificates per second. */
async function throughput(pool: SigningPool, csrs: readonly Uint8Array[], validity: Validity, seconds: number): Promise<number> {
  await pool.start();
  const window = Math.max(512, pool.workers * 64 * 4);
  let next = 0;
  let done = 0;
  let inFlight = 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await new Promise<void>((resolve, reject) => {
    const submit = () => {
      while (inFlight < window && performance.now() < end) {
        inFlight += 1;
        pool.issue({ csr: csrs[next++ % csrs.length]!, profile, validity }).then(finish, reject);
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
  return done / ((performance.now() - start) / 1000);
}

interface OpensslSpeed {
  readonly ecdsaSign: number;
  readonly ecdsaVerify: number;
  readonly rsaSign: number;
  readonly rsaVerify: number;
}

function opensslSpeed(): OpensslSpeed {
  const out = execFileSync("openssl", ["speed", "-seconds", "3", "ecdsap256", "rsa2048"], { stdio: ["ignore", "pipe", "ignore"] }).toString();
  const rsa = /^rsa 2048 bits\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)/m.exec(out);
  const ec = /^\s*256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)/m.exec(out);
  if (!rsa || !ec) throw new Error(`cannot read openssl speed output:\n${out}`);
  return { rsaSign: Number(rsa[1]), rsaVerify: Number(rsa[2]), ecdsaSign: Number(ec[1]), ecdsaVerify: Number(ec[2]) };
}

const ceiling = (a: number, b: number) => 1 / (1 / a + 1 / b);
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const pct = (n: number) => `${(n * 100).toFixed(0)}%`;

async function main(): Promise<void> {
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  console.log(`# bench:sign ${new Date().toISOString()}`);
  console.log(`node ${process.version}, OpenSSL ${process.versions.openssl}, ${ALL} cores available (${cpu}), load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);

  let t = performance.now();
  const csrs = Array.from({ length: DISTINCT_CSRS }, (_, i) => makeCsr(i));
  console.log(`${DISTINCT_CSRS} distinct P-256 CSRs built in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const accel = nativeCrypto ? "native accelerator (native/crypto.c): CSR checks and CA signatures in OpenSSL" : "node:crypto (JWK import + crypto.verify, crypto.sign)";
  console.log(`crypto: ${accel}; PLATFORM_CA_NATIVE=0 forces node:crypto`);

  const now = new Date();
  const cas: Record<string, GeneratedCa> = {
    "P-256": await generateCa({ commonName: "bench P-256 CA", keyType: "p256", lifetimeSeconds: 365 * 86_400, now }),
    "RSA-2048": await generateCa({ commonName: "bench RSA-2048 CA", keyType: "rsa2048", lifetimeSeconds: 365 * 86_400, now }),
  };
  const validity = { notBefore: new Date(now.getTime() - 300_000), notAfter: new Date(now.getTime() + 86_400_000) };

  // Where the time goes, one thread, µs per operation.
  // Only 1,024 parsed requests are kept for the issue rows: holding all 8,192 makes V8 pretenure what parseCsr
  // allocates (allocation-site feedback: "these objects survive"), which doubled every later parse on this thread.
  const parsed = csrs.slice(0, 1024).map((c) => parseCsr(c, { verify: false }));
  const key = parsed[0]!.publicKey.spki;
  const sample = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const data = Buffer.alloc(400, 1);
  const sig = sign("sha256", data, sample.privateKey);
  const jwk = sample.publicKey.export({ format: "jwk" });
  const issuers = { p256: new Issuer(cas["P-256"]!.ca), rsa: new Issuer(cas["RSA-2048"]!.ca) };
  const breakdown: [string, number][] = [
    ["parseCsr without signature check", perOp(20_000, (i) => parseCsr(csrs[i % DISTINCT_CSRS]!, { verify: false }))],
    ["parseCsr with signature check", perOp(8000, (i) => parseCsr(csrs[i % DISTINCT_CSRS]!))],
    ["Issuer.issue, P-256 CA (encode + sign + PEM)", perOp(20_000, (i) => issuers.p256.issue({ csr: parsed[i % parsed.length]!, profile, validity }))],
    ["Issuer.issue, RSA-2048 CA", perOp(3000, (i) => issuers.rsa.issue({ csr: parsed[i % parsed.length]!, profile, validity }))],
    ["node crypto.sign P-256, key imported once", perOp(20_000, () => sign("sha256", data, sample.privateKey))],
    ["node crypto.verify P-256, key imported once", perOp(10_000, () => verify("sha256", data, sample.publicKey, sig))],
    ["node createPublicKey P-256 from JWK", perOp(10_000, () => createPublicKey({ key: jwk, format: "jwk" }))],
    ["node createPublicKey P-256 from SPKI DER", perOp(5000, () => createPublicKey({ key: Buffer.from(key), format: "der", type: "spki" }))],
  ];
  console.log("\n| step (one thread) | µs/op |\n|---|---:|");
  for (const [name, us] of breakdown) console.log(`| ${name} | ${us.toFixed(1)} |`);

  // RSA key generation is slow: a few keys, each under many subjects, still give distinct CSRs (and key imports).
  const rsaKeys = Array.from({ length: 16 }, () => generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey);
  const rsaCsrs = Array.from({ length: 4096 }, (_, i) => makeCsr(i, rsaKeys[i % rsaKeys.length]));

  const rows: { ca: string; csr: string; mode: string; rate: number }[] = [];
  const runs = [
    { ca: "P-256", csr: "P-256", set: csrs, direct: 20_000 },
    { ca: "RSA-2048", csr: "P-256", set: csrs, direct: 6000 },
    { ca: "RSA-2048", csr: "RSA-2048", set: rsaCsrs, direct: 3000 },
  ];
  for (const run of runs) {
    const ca = cas[run.ca]!.ca;
    const issuer = new Issuer(ca);
    const direct = perOp(run.direct, (i) => issuer.issue({ csr: parseCsr(run.set[i % run.set.length]!), profile, validity }));
    rows.push({ ...run, mode: "direct loop, no pool", rate: 1e6 / direct });
    for (const workers of [...new Set([0, 1, ALL])]) {
      const pool = new SigningPool({ workers, ca });
      await throughput(pool, run.set, validity, Math.min(1, SECONDS));
      // Best of two windows: the machine is shared, and a neighbour's burst only ever lowers a window.
      const rate = Math.max(await throughput(pool, run.set, validity, SECONDS), await throughput(pool, run.set, validity, SECONDS));
      await pool.close();
      rows.push({ ...run, mode: workers === 0 ? "pool, workers 0 (in-process)" : `pool, ${workers} worker${workers > 1 ? "s" : ""}`, rate });
    }
  }

  t = performance.now();
  const speed = opensslSpeed();
  console.log(`\nopenssl speed (one core, ${((performance.now() - t) / 1000).toFixed(0)} s): ECDSA P-256 sign ${fmt(speed.ecdsaSign)}/s, verify ${fmt(speed.ecdsaVerify)}/s; RSA-2048 sign ${fmt(speed.rsaSign)}/s, verify ${fmt(speed.rsaVerify)}/s`);
  const signRate = (ca: string) => (ca === "P-256" ? speed.ecdsaSign : speed.rsaSign);
  const verifyRate = (csr: string) => (csr === "P-256" ? speed.ecdsaVerify : speed.rsaVerify);
  console.log("ceiling = one core doing only the CA signature and the CSR verification at openssl speed: 1/(1/sign + 1/verify)");

  console.log("\n| CA | CSR keys | mode | certs/s | vs openssl sign/s (1 core) | vs sign+verify ceiling (1 core) |\n|---|---|---|---:|---:|---:|");
  for (const r of rows) {
    const sign1 = signRate(r.ca);
    console.log(`| ${r.ca} | ${r.csr} | ${r.mode} | ${fmt(r.rate)} | ${pct(r.rate / sign1)} | ${pct(r.rate / ceiling(sign1, verifyRate(r.csr)))} |`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
