import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { SigningPool } from "../bench/pool/pool.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import { csr } from "../fixtures/csr.js";
import { profile, T0 } from "./issuance-fixtures.js";
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
  args.push("--target", "es2022", "--types", "node", "--skipLibCheck", "--lib", "es2023,dom", join(root, "test/bench/pool/pool-worker.ts"));
  execFileSync(join(root, "node_modules/.bin/tsc"), args, { cwd: root, stdio: "pipe", timeout: 60_000 });
  writeFileSync(join(out, "package.json"), '{ "type": "module" }\n');
  symlinkSync(join(root, "node_modules"), join(out, "node_modules"));
  workerScript = join(out, "test/bench/pool/pool-worker.js");
}, 90_000);

const validity = { notBefore: T0, notAfter: new Date(T0.getTime() + 86_400_000) };

async function distinctCsrs(n: number): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, async (_, i) => (await csr({ cn: `client-${i}`, dns: [`n${i}.example`], freshKey: true })).pem));
}

function verifyAll(caPem: string, pems: readonly string[]): string {
  mkdirSync(join(dir, "v"), { recursive: true });
  writeFiles(join(dir, "v"), Object.fromEntries([["ca.pem", caPem], ...pems.map((p, i) => [`leaf-${i}.pem`, p])]));
  const files = pems.map((_, i) => join(dir, "v", `leaf-${i}.pem`));
  return run("openssl", ["verify", "-attime", String(T0.getTime() / 1000), "-CAfile", join(dir, "v", "ca.pem"), ...files]);
}

function pool(ca: CaKeyPair, workers: number, batchSize = 8): SigningPool {
  return new SigningPool({ workers, ca, workerScript, batchSize });
}

describe("SigningPool", () => {
  it.each([0, 1, 2])("issues verified certificates for concurrent jobs with %i workers", async (workers) => {
    const { ca, certPem } = await testCa({ keyType: "p256" });
    const csrs = await distinctCsrs(40);
    const p = pool(ca, workers);
    try {
      const certs = await Promise.all(csrs.map((c) => p.issue({ csr: c, profile: profile(), validity })));
      expect(certs.map((c) => new X509Certificate(c.der).subject)).toEqual(csrs.map((_, i) => `CN=client-${i}`));
      expect(new Set(certs.map((c) => c.serialHex)).size).toBe(40);
      expect(certs[0]!.notAfter).toEqual(validity.notAfter);
      const out = verifyAll(certPem, certs.map((c) => c.pem));
      expect(out.match(/: OK$/gm)).toHaveLength(40);
    } finally {
      await p.close();
    }
  });

  it.each([0, 2])("fails only the job whose CSR signature is broken (%i workers)", async (workers) => {
    const { ca } = await testCa({ keyType: "p256" });
    const good = (await csr({ cn: "good" })).der;
    const bad = Uint8Array.from(good);
    bad[bad.length - 5]! ^= 0x01;
    const p = pool(ca, workers);
    try {
      const results = await Promise.allSettled([good, bad, good].map((c) => p.issue({ csr: c, profile: profile(), validity })));
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      const reason = (results[1] as PromiseRejectedResult).reason;
      expect(isPlatformError(reason, "CSR_SIGNATURE")).toBe(true);
    } finally {
      await p.close();
    }
  });

  it.each([0, 2])("keeps PEM and DER jobs, profiles and windows apart within one packed batch (%i workers)", async (workers) => {
    const { ca } = await testCa({ keyType: "p256" });
    const fixtures = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => csr({ cn: `mixed-${i}`, dns: [`m${i}.example`], freshKey: true })));
    const server = profile({ usages: ["digital signature", "server auth"] });
    const client = profile({ usages: ["digital signature", "client auth"] });
    const jobs = fixtures.map((f, i) => ({
      csr: i % 2 === 0 ? f.pem : f.der,
      profile: i % 3 === 0 ? server : client,
      validity: { notBefore: T0, notAfter: new Date(T0.getTime() + (i + 1) * 3_600_000) },
    }));
    const p = pool(ca, workers, 64);
    try {
      const certs = await Promise.all(jobs.map((j) => p.issue(j)));
      certs.forEach((cert, i) => {
        const x = new X509Certificate(cert.pem);
        expect(x.subject).toBe(`CN=mixed-${i}`);
        expect(Buffer.from(x.raw)).toEqual(Buffer.from(cert.der));
        expect(x.serialNumber.toLowerCase()).toBe(cert.serialHex);
        expect(new Date(x.validTo).getTime()).toBe(jobs[i]!.validity.notAfter.getTime());
        expect(cert.notAfter).toEqual(jobs[i]!.validity.notAfter);
        expect(x.toLegacyObject().ext_key_usage).toEqual([i % 3 === 0 ? "1.3.6.1.5.5.7.3.1" : "1.3.6.1.5.5.7.3.2"]);
      });
    } finally {
      await p.close();
    }
  });

  it("refuses to start when a worker cannot load the CA", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const other = await testCa({ keyType: "p384" });
    const p = pool({ ...ca, certPem: other.certPem }, 1);
    await expect(p.start()).rejects.toMatchObject({ code: "KEY_MISMATCH" });
    await expect(p.issue({ csr: (await csr({ cn: "x" })).pem, profile: profile(), validity })).rejects.toMatchObject({ code: "KEY_MISMATCH" });
    await p.close();
  });

  it.each([0, 1])("signs with the new CA after updateCa (%i workers)", async (workers) => {
    const first = await testCa({ keyType: "p256" });
    const second = await testCa({ keyType: "ed25519" });
    const request = { csr: (await csr({ cn: "rotated" })).pem, profile: profile(), validity };
    const p = pool(first.ca, workers);
    try {
      expect(verifyAll(first.certPem, [(await p.issue(request)).pem])).toContain("OK");
      await p.updateCa(second.ca);
      const cert = new X509Certificate((await p.issue(request)).der);
      expect(cert.issuer).toBe("CN=test ed25519 CA");
      expect(cert.verify(second.ca.publicKey)).toBe(true);
    } finally {
      await p.close();
    }
  });

  it("replaces a worker that dies and keeps serving", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const p = pool(ca, 1);
    const request = { csr: (await csr({ cn: "again" })).pem, profile: profile(), validity };
    try {
      await p.issue(request);
      const slots = (p as unknown as { slots: { worker: { terminate(): Promise<number> } }[] }).slots;
      await slots[0]!.worker.terminate();
      const cert = await p.issue(request);
      expect(new X509Certificate(cert.der).subject).toBe("CN=again");
    } finally {
      await p.close();
    }
  });

  it("finishes submitted jobs on close and refuses later ones", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const csrs = await distinctCsrs(20);
    const p = pool(ca, 2, 4);
    const submitted = csrs.map((c) => p.issue({ csr: c, profile: profile(), validity }));
    await p.close();
    const done = await Promise.allSettled(submitted);
    expect(done.every((r) => r.status === "fulfilled")).toBe(true);
    await expect(p.issue({ csr: csrs[0]!, profile: profile(), validity })).rejects.toMatchObject({ code: "NOT_READY" });
  });

  it.each([
    [{ workers: -1 }, "expected `workers` to be an integer 0–256, got -1"],
    [{ workers: 1, batchSize: 0 }, "expected `batchSize` to be an integer 1–4096, got 0"],
  ])("validates its options: %j", async (opts, message) => {
    const { ca } = await testCa({ keyType: "p256" });
    expect(() => new SigningPool({ ca, ...opts })).toThrow(message);
  });
});
