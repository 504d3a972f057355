// A signer's rules on the signing pool's threads: rebuilt there from portable data, refusals and broken requests as a checked read gives them.
import { X509Certificate } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { parseCsr } from "../../src/pki/csr.js";
import type { JobRules, RequestRule } from "../../src/pki/pool-rules.js";
import { SigningPool } from "../../src/pki/signing-pool.js";
import type { PoolJob } from "../../src/pki/signing-pool-types.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import { csr, tamperedSignature } from "../fixtures/csr.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { DAY_FROM_T0, profile } from "./issuance-fixtures.js";

// The workers run the compiled worker of dist/ (npm run build), which imports the rules from this plain module.
const dir = tempDir("pool-rules-");
const rulesModule = pathToFileURL(join(dir, "rules.mjs")).href;
writeFileSync(
  join(dir, "rules.mjs"),
  "export function refuse(data) { return (r) => (r.csr.subject.commonName === data.cn ? `worker refuses ${data.cn} for ${r.username}` : undefined); }\n" +
    "export const notARuleBuilder = 42;\n",
);

/** Rules a worker rebuilds as `refuse({ cn })`; on the calling thread `here` runs instead. */
const rules = (cn: string, here: RequestRule): JobRules => ({ rule: here, portable: { module: rulesModule, export: "refuse", data: { cn } } });
const never: RequestRule = () => {
  throw new Error("the rule ran on the calling thread");
};
const validity = DAY_FROM_T0;
const job = (ca: CaKeyPair, der: Uint8Array, r: JobRules, username = "alice"): PoolJob => ({ ca, csr: der, profile: profile(), validity, check: { rules: r, request: { signerName: "example.com/rules", usages: ["client auth"], username } } });

const brokenSignature = async (cn: string): Promise<Uint8Array> => tamperedSignature((await csr({ cn, freshKey: true })).der);

const pools: SigningPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
function pool(): SigningPool {
  const p = new SigningPool({ workers: 2, batchSize: 4, startCostMs: 0 });
  pools.push(p);
  return p;
}

describe("rules of pool jobs", () => {
  it("judges a backlog on the workers with the rules rebuilt there: refusals carry the rule's reason, the rest is issued", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const p = pool();
    const ders = await Promise.all(Array.from({ length: 10 }, async (_, i) => (await csr({ cn: `client-${i}`, freshKey: true })).der));
    const r = rules("client-3", never);
    const settled = await Promise.allSettled(ders.map((der, i) => p.issue(job(ca, der, r, `user-${i}`), ders.length - i)));
    expect(p.counts.workers).toBe(10);
    settled.forEach((s, i) => {
      if (i === 3) expect(s).toMatchObject({ status: "rejected", reason: { code: "SIGNER_REJECTED", message: "worker refuses client-3 for user-3" } });
      else expect(s.status === "fulfilled" && new X509Certificate(s.value.der).verify(ca.publicKey)).toBe(true);
    });
  });

  it("issues a batch whose signers' rules are still loading when the worker is told to forget the oldest of them", async () => {
    // Seventeen signers' rules, each a module of its own that takes a while to load: the seventeenth drops the first
    // from what the worker keeps, while the one batch that names all of them waits for their loads.
    writeFileSync(join(dir, "slow-rules.mjs"), "await new Promise((resolve) => setTimeout(resolve, 300));\nexport function refuse() { return () => undefined; }\n");
    const { ca } = await testCa({ keyType: "p256" });
    const p = new SigningPool({ workers: 1, batchSize: 64, startCostMs: 0 });
    pools.push(p);
    const ders = await Promise.all(Array.from({ length: 17 }, async (_, i) => (await csr({ cn: `slow-${i}`, freshKey: true })).der));
    const slow = (i: number): JobRules => ({ rule: never, portable: { module: `${pathToFileURL(join(dir, "slow-rules.mjs")).href}?signer=${i}`, export: "refuse", data: {} } });
    const certs = await Promise.all(ders.map((der, i) => p.issue(job(ca, der, slow(i)), ders.length - i)));
    expect(certs.map((c) => new X509Certificate(c.der).subject)).toEqual(ders.map((_, i) => `CN=slow-${i}`));
  });

  it("reports a broken signature, refused or not, as the reading's error, on the workers and on the calling thread", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const refused = await brokenSignature("refused");
    const accepted = await brokenSignature("accepted");
    const p = pool();
    const refuseHere: RequestRule = (q) => (q.csr.subject.commonName === "refused" ? "refused here" : undefined);
    for (const backlog of [3, 0]) {
      const r = rules("refused", backlog === 0 ? refuseHere : never);
      await expect(p.issue(job(ca, refused, r), backlog)).rejects.toMatchObject({ code: "CSR_SIGNATURE" });
      await expect(p.issue(job(ca, accepted, r), backlog)).rejects.toMatchObject({ code: "CSR_SIGNATURE" });
    }
    expect(p.counts).toEqual({ inline: 2, workers: 2 });
    // Bytes that are not a request at all fail at the reading, before any rule.
    await expect(p.issue(job(ca, Uint8Array.of(0x30, 0x03, 1, 2, 3), rules("x", never)), 2)).rejects.toMatchObject({ code: "DER_INVALID" });
  });

  it("gives a refusal on the calling thread the rule's own reason", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const der = (await csr({ cn: "lone" })).der;
    const here: RequestRule = (q) => `refused ${q.csr.subject.commonName} of ${q.username}`;
    await expect(pool().issue(job(ca, der, rules("lone", here)))).rejects.toMatchObject({ code: "SIGNER_REJECTED", message: "refused lone of alice" });
    expect(parseCsr(der).subject.commonName).toBe("lone");
  });

  it("fails the jobs of rules a worker cannot load with SIGNER_NOT_READY, and keeps serving others", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const p = pool();
    const der = (await csr({ cn: "any", freshKey: true })).der;
    const broken: JobRules = { rule: never, portable: { module: rulesModule, export: "notARuleBuilder", data: {} } };
    await expect(p.issue(job(ca, der, broken), 2)).rejects.toMatchObject({ code: "SIGNER_NOT_READY", message: expect.stringContaining("does not export a function notARuleBuilder") });
    await expect(p.issue(job(ca, der, rules("other", never)), 2)).resolves.toMatchObject({ notAfter: validity.notAfter });
  });

  it("refuses rules over a CSR that is not given as bytes", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const pem = (await csr({ cn: "text" })).pem;
    await expect(pool().issue({ ...job(ca, Uint8Array.of(), rules("x", never)), csr: pem })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
