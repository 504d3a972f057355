// SigningPool: the same certificates on workers as on the calling thread, errors as PlatformError, idle path, shutdown.
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Worker } from "node:worker_threads";
import { beforeAll, describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { parseCsr } from "../../src/pki/csr.js";
import { unverifiedKey } from "../../src/pki/csr-signature.js";
import { CaSigner } from "../../signers/ca-signer.js";
import { SigningPool } from "../../src/pki/signing-pool.js";
import type { PoolJob } from "../../src/pki/signing-pool-types.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import { csr, tamperedSignature } from "../fixtures/csr.js";
import { DAY_FROM_T0, opensslText, profile, T0 } from "./issuance-fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir, writeFiles } from "../fixtures/temp-dir.js";
import { run } from "../fixtures/process.js";

const root = resolve(import.meta.dirname, "../..");
const dir = tempDir("pool-");
let workerScript = "";

// Workers load JavaScript: compile the worker and what it imports from the current sources into a temp dir.
beforeAll(() => {
  const out = join(dir, "build");
  const args = ["--ignoreConfig", "--outDir", out, "--rootDir", root, "--module", "nodenext", "--moduleResolution", "nodenext"];
  args.push("--target", "es2022", "--types", "node", "--skipLibCheck", "--lib", "es2023,dom", join(root, "src/pki/signing-pool-worker.ts"));
  execFileSync(join(root, "node_modules/.bin/tsc"), args, { cwd: root, stdio: "pipe", timeout: 60_000 });
  writeFileSync(join(out, "package.json"), '{ "type": "module" }\n');
  symlinkSync(join(root, "node_modules"), join(out, "node_modules"));
  workerScript = join(out, "src/pki/signing-pool-worker.js");
}, 90_000);

const validity = DAY_FROM_T0;

async function distinctCsrs(n: number): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, async (_, i) => (await csr({ cn: `client-${i}`, dns: [`n${i}.example`], freshKey: true })).pem));
}

function verifyAll(caPem: string, pems: readonly string[]): string {
  mkdirSync(join(dir, "v"), { recursive: true });
  writeFiles(join(dir, "v"), Object.fromEntries([["ca.pem", caPem], ...pems.map((p, i) => [`leaf-${i}.pem`, p])]));
  const files = pems.map((_, i) => join(dir, "v", `leaf-${i}.pem`));
  return run("openssl", ["verify", "-attime", String(T0.getTime() / 1000), "-CAfile", join(dir, "v", "ca.pem"), ...files]);
}

/** openssl's reading of a certificate without what differs per issuance (serial, signature value). */
function content(pem: string): string {
  return opensslText(pem)
    .replace(/Serial Number:\n?.*\n/, "")
    .replace(/Signature Value:[\s\S]*$/, "");
}

/** A pool whose workers start for any backlog (startCostMs 0), unless the test says otherwise. */
function pool(workers: number, batchSize = 8, startCostMs = 0): SigningPool {
  return new SigningPool({ workers, workerScript, batchSize, startCostMs });
}

/** The worker threads of a pool, to watch them stop. */
function threads(p: SigningPool): Worker[] {
  return (p as unknown as { slots: { worker: Worker }[] }).slots.map((s) => s.worker);
}

const job = (ca: CaKeyPair, c: PoolJob["csr"], extra: Partial<PoolJob> = {}): PoolJob => ({ ca, csr: c, profile: profile(), validity, ...extra });

describe("SigningPool", () => {
  it.each([0, 1, 2])("issues verified certificates for a backlog of jobs with %i workers", async (workers) => {
    const { ca, certPem } = await testCa({ keyType: "p256" });
    const csrs = await distinctCsrs(40);
    const p = pool(workers);
    try {
      const certs = await Promise.all(csrs.map((c, i) => p.issue(job(ca, c), csrs.length - i)));
      expect(certs.map((c) => new X509Certificate(c.der).subject)).toEqual(csrs.map((_, i) => `CN=client-${i}`));
      expect(new Set(certs.map((c) => c.serialHex)).size).toBe(40);
      expect(certs[0]!.notAfter).toEqual(validity.notAfter);
      expect(verifyAll(certPem, certs.map((c) => c.pem)).match(/: OK$/gm)).toHaveLength(40);
      expect(p.counts.workers).toBe(workers === 0 ? 0 : 40);
    } finally {
      await p.close();
    }
  });

  it("gives on a worker the certificate the calling thread gives (parsed CSR, signer extensions, RSA CA)", async () => {
    const { ca } = await testCa({ keyType: "rsa2048" });
    const request = await csr({ cn: "same", dns: ["same.example"], ip: ["10.0.0.1"] });
    const extension = Uint8Array.from([0x30, 0x0b, 0x06, 0x03, 0x55, 0x1d, 0x20, 0x04, 0x04, 0x30, 0x02, 0x30, 0x00]);
    const p = pool(1);
    try {
      for (const [i, c] of [request.pem, request.der, parseCsr(request.der)].entries()) {
        const one = job(ca, c, { signerExtensions: [extension] });
        const inline = await p.issue(one, 0);
        expect(p.started()).toBe(i > 0);
        const [onWorker] = await Promise.all([p.issue(one, 1), p.issue(one, 0)]);
        expect(p.started()).toBe(true);
        expect(content(onWorker!.pem)).toBe(content(inline.pem));
        expect(content(inline.pem)).toContain("X509v3 Certificate Policies");
      }
      expect(p.counts).toEqual({ inline: 3, workers: 6 });
    } finally {
      await p.close();
    }
  });

  it("issues one job with nothing waiting on the calling thread and starts no worker", async () => {
    const { ca, certPem } = await testCa({ keyType: "p256" });
    const p = pool(2);
    const cert = await p.issue(job(ca, (await csr({ cn: "alone" })).pem));
    expect(verifyAll(certPem, [cert.pem])).toContain("OK");
    expect(p.started()).toBe(false);
    expect(p.counts).toEqual({ inline: 1, workers: 0 });
    await p.close();
  });

  it("issues a batch that names more CAs than a worker keeps, and a dropped CA again afterwards", async () => {
    const cas = await Promise.all(Array.from({ length: 10 }, (_, i) => testCa({ keyType: "p256", commonName: `batch CA ${i}` })));
    const csrs = await distinctCsrs(11);
    const p = pool(1, 64);
    try {
      // One tick, one worker: the ten jobs share one batch, and the ninth CA drops the first from the worker's CAs.
      const certs = await Promise.all(cas.map(({ ca }, i) => p.issue(job(ca, csrs[i]!), cas.length - i)));
      for (const [i, cert] of certs.entries()) expect(verifyAll(cas[i]!.certPem, [cert.pem])).toMatch(/: OK$/m);
      const again = await Promise.all([p.issue(job(cas[0]!.ca, csrs[10]!), 1), p.issue(job(cas[9]!.ca, csrs[10]!), 0)]);
      expect(verifyAll(cas[0]!.certPem, [again[0]!.pem])).toMatch(/: OK$/m);
      expect(p.counts.workers).toBe(12);
    } finally {
      await p.close();
    }
  });

  it("shares a queue smaller than a batch out over the idle workers", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const csrs = await distinctCsrs(16);
    const p = pool(2, 64);
    try {
      await Promise.all(csrs.map((c, i) => p.issue(job(ca, c), 16 - i)));
      // Both workers got work: two batches of 8, not one of 16.
      const batches = (p as unknown as { nextBatchId: number }).nextBatchId - 1;
      expect(batches).toBe(2);
    } finally {
      await p.close();
    }
  });

  it("starts workers only once the backlog's measured work is worth their start", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const request = job(ca, (await csr({ cn: "cheap" })).der);
    const p = pool(2, 8, 1000);
    try {
      await p.issue(request, 5); // not timed yet: runs here and gives the time of one issuance
      await Promise.all([p.issue(request, 10), p.issue(request, 9)]);
      expect(p.started()).toBe(false);
      expect(p.counts).toEqual({ inline: 3, workers: 0 });
      // Ten million waiting P-256 issuances are worth far more than a second of starting threads.
      await Promise.all([p.issue(request, 10_000_000), p.issue(request, 1)]);
      expect(p.started()).toBe(true);
      expect(p.counts.workers).toBe(2);
    } finally {
      await p.close();
    }
  });

  it.each([0, 2])("fails only the job whose CSR signature is broken, with a PlatformError (%i workers)", async (workers) => {
    const { ca } = await testCa({ keyType: "p256" });
    const good = (await csr({ cn: "good" })).der;
    const bad = tamperedSignature(good);
    const p = pool(workers);
    try {
      const results = await Promise.allSettled([good, bad, good].map((c) => p.issue(job(ca, c), 3)));
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect(isPlatformError((results[1] as PromiseRejectedResult).reason, "CSR_SIGNATURE")).toBe(true);
    } finally {
      await p.close();
    }
  });

  it("keeps CAs, PEM and DER jobs, profiles and windows apart within one packed batch", async () => {
    const first = await testCa({ keyType: "p256" });
    const second = await testCa({ keyType: "ed25519" });
    const fixtures = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => csr({ cn: `mixed-${i}`, dns: [`m${i}.example`], freshKey: true })));
    const server = profile({ usages: ["digital signature", "server auth"] });
    const client = profile({ usages: ["digital signature", "client auth"] });
    const jobs = fixtures.map((f, i) => ({
      ca: i % 2 === 0 ? first.ca : second.ca,
      csr: i % 2 === 0 ? f.pem : f.der,
      profile: i % 3 === 0 ? server : client,
      validity: { notBefore: T0, notAfter: new Date(T0.getTime() + (i + 1) * 3_600_000) },
    }));
    const p = pool(2, 64);
    try {
      const certs = await Promise.all(jobs.map((j) => p.issue(j, jobs.length)));
      certs.forEach((cert, i) => {
        const x = new X509Certificate(cert.pem);
        expect(x.subject).toBe(`CN=mixed-${i}`);
        expect(x.verify(jobs[i]!.ca.publicKey)).toBe(true);
        expect(Buffer.from(x.raw)).toEqual(Buffer.from(cert.der));
        expect(x.serialNumber.toLowerCase()).toBe(cert.serialHex);
        expect(new Date(x.validTo).getTime()).toBe(jobs[i]!.validity.notAfter.getTime());
        expect(x.toLegacyObject().ext_key_usage).toEqual([i % 3 === 0 ? "1.3.6.1.5.5.7.3.1" : "1.3.6.1.5.5.7.3.2"]);
      });
    } finally {
      await p.close();
    }
  });

  it("fails the jobs of a CA the worker cannot use with that CA's error", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const other = await testCa({ keyType: "p384" });
    const broken: CaKeyPair = { ...ca, keyAlgorithm: "unknown" as CaKeyPair["keyAlgorithm"] };
    const p = pool(1);
    try {
      const request = (await csr({ cn: "x" })).pem;
      const [bad, good] = await Promise.allSettled([p.issue(job(broken, request), 1), p.issue(job(other.ca, request), 1)]);
      expect(bad.status).toBe("rejected");
      expect(isPlatformError((bad as PromiseRejectedResult).reason)).toBe(true);
      expect(good.status).toBe("fulfilled");
    } finally {
      await p.close();
    }
  });

  it("replaces a worker that dies and keeps serving", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const p = pool(1);
    const request = job(ca, (await csr({ cn: "again" })).pem);
    try {
      await p.issue(request, 1);
      await threads(p)[0]!.terminate();
      const cert = await p.issue(request, 1);
      expect(new X509Certificate(cert.der).subject).toBe("CN=again");
    } finally {
      await p.close();
    }
  });

  it("finishes submitted jobs on close, terminates its workers and refuses later jobs", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const csrs = await distinctCsrs(20);
    const p = pool(2, 4);
    const submitted = csrs.map((c) => p.issue(job(ca, c), 20));
    await Promise.resolve();
    const workers = threads(p);
    expect(workers).toHaveLength(2);
    const exited = workers.map((w) => new Promise<number>((r) => w.once("exit", r)));
    await p.close();
    expect((await Promise.allSettled(submitted)).every((r) => r.status === "fulfilled")).toBe(true);
    expect(await Promise.all(exited)).toHaveLength(2);
    expect(p.started()).toBe(false);
    await expect(p.issue(job(ca, csrs[0]!))).rejects.toMatchObject({ code: "NOT_READY" });
  });

  it("does not keep a process alive once its jobs are done, even unclosed; starts under flags a worker refuses", () => {
    const dist = (file: string) => JSON.stringify(pathToFileURL(join(root, "dist/src/pki", file)).href);
    const script = [
      `import { generateKeyPairSync } from "node:crypto";`,
      `import { generateCa } from ${dist("ca.js")};`,
      `import { buildCsr } from ${dist("csr-builder.js")};`,
      `import { SigningPool } from ${dist("signing-pool.js")};`,
      `import { resolveUsages } from ${dist("usages.js")};`,
      `const ca = (await generateCa({ commonName: "exit", keyType: "p256", lifetimeSeconds: 86400, now: new Date() })).ca;`,
      `const csr = buildCsr({ commonName: "a" }, generateKeyPairSync("ec", { namedCurve: "P-256" }));`,
      `const pool = new SigningPool({ workers: 2, startCostMs: 0 });`,
      `const job = { ca, csr, profile: { usages: resolveUsages(["client auth"]), isCa: false, includeSans: true }, validity: { notBefore: new Date(), notAfter: new Date(Date.now() + 3600000) } };`,
      `const certs = await Promise.all([3, 2, 1, 0].map((backlog) => pool.issue(job, backlog)));`,
      `console.log(certs.length, pool.started(), pool.counts.workers);`,
    ].join("\n");
    // The build's worker script is what a process outside the tests uses (npm run build comes first). A worker
    // refuses both flags: --input-type is left out, a per-process V8 flag makes the worker start with none.
    const out = execFileSync(process.execPath, ["--single-threaded-gc", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
    expect(out).toBe("4 true 4\n");
  }, 40_000);

  it.each([
    [{ workers: -1 }, "expected `workers` to be an integer 0–256, got -1"],
    [{ workers: 1, batchSize: 0 }, "expected `batchSize` to be an integer 1–4096, got 0"],
    [{ startCostMs: -1 }, "expected `startCostMs` to be ≥ 0, got -1"],
  ])("validates its options: %j", (opts, message) => {
    expect(() => new SigningPool(opts)).toThrow(message);
  });
});

// The signing controller hands a CaSigner requests as bytes nobody here checked (Signer.signBytes): a signer whose rules
// stay on the calling thread reads them there without the check, which then happens where the certificate is made, on
// the pool's threads for a backlog.
describe("CaSigner.signBytes through the pool, with rules on the calling thread", () => {
  const fields = { signerName: "example.com/unchecked", usages: ["client auth"] };

  it("issues a backlog of requests never checked on this thread, checked and signed by the workers", async () => {
    const { ca, certPem } = await testCa({ keyType: "p256" });
    const signer = new CaSigner({ signerName: "example.com/unchecked", ca, check: () => undefined });
    const p = pool(2);
    try {
      const ders = (await distinctCsrs(12)).map((pem) => parseCsr(pem, { verify: false }).der);
      const results = await signer.signBytes(ders.map((der) => ({ der, request: fields })), T0, { pool: p, backlog: 0 });
      const chains = results.map((r) => {
        if (isPlatformError(r)) throw r;
        return r.pem;
      });
      expect(p.counts.workers).toBeGreaterThan(0);
      expect(verifyAll(certPem, chains)).toMatch(/leaf-11\.pem: OK/);
      // Nothing was checked on this thread: the verified memory still does not know these requests.
      for (const der of ders) expect(unverifiedKey(der)).toBeDefined();
    } finally {
      await p.close();
    }
  });

  it.each([0, 3])("refuses a request whose signature is broken with CSR_SIGNATURE (backlog %i)", async (backlog) => {
    const { ca } = await testCa({ keyType: "p256" });
    const bad = tamperedSignature((await csr({ cn: "broken" })).der);
    const plans: string[] = [];
    const signers = [
      new CaSigner({ signerName: "example.com/unchecked", ca, check: () => undefined }),
      // A plan that rewrites the request is issued from the rewrite: the original's bytes are checked first.
      new CaSigner({ signerName: "example.com/unchecked", ca, check: () => undefined, plan: (r) => (plans.push("rewritten"), { csr: { ...r.csr }, profile: profile() }) }),
      // A refusal by the signer's rules names the broken bytes first, as a checked read would.
      new CaSigner({ signerName: "example.com/unchecked", ca, check: () => "not this one" }),
    ];
    const p = pool(2);
    try {
      for (const signer of signers) {
        expect(await signer.signBytes([{ der: bad, request: fields }], T0, { pool: p, backlog })).toEqual([expect.objectContaining({ code: "CSR_SIGNATURE" })]);
        expect(await signer.signBytes([{ der: bad, request: fields }], T0)).toEqual([expect.objectContaining({ code: "CSR_SIGNATURE" })]);
      }
      expect(plans.length).toBe(2);
      // The same request checked as sign() expects it is refused at the read, before any signer sees it.
      expect(() => parseCsr(bad)).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
    } finally {
      await p.close();
    }
  });
});
