// Requests this process verified before (its memory of verified requests) are issued without a second check, on the
// calling thread and on the signing pool's workers; a request the memory does not hold is checked, and refused if broken.
import { X509Certificate } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { rememberVerified, shareVerifiedMemo, unverifiedKey } from "../../src/pki/csr-signature.js";
import { issueDerNatively } from "../../src/pki/issue.js";
import { nativeBatchAvailable } from "../../src/pki/native-issue.js";
import { SigningPool } from "../../src/pki/signing-pool.js";
import type { PoolJob } from "../../src/pki/signing-pool-types.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import { SharedVerifiedMemo } from "../../src/pki/verified-memo.js";
import { testCa } from "../fixtures/ca.js";
import { csr, tamperedSignature } from "../fixtures/csr.js";
import { DAY_FROM_T0, profile } from "./issuance-fixtures.js";

const validity = DAY_FROM_T0;
// The built worker finds the addon beside the package (dist/ under the repository); `npm run build` first.
const workerScript = new URL("../../dist/src/pki/signing-pool-worker.js", import.meta.url);

let ca: CaKeyPair;
beforeAll(async () => {
  ca = (await testCa({ keyType: "p256" })).ca;
});
afterEach(() => shareVerifiedMemo(undefined));

/**
 * A request whose self-signature does not verify. The memory is trusted (only this process's own verifier writes to
 * it, docs/security.md): putting such a request's key in it here is how a test sees that the check was skipped.
 */
const broken = async (cn: string): Promise<Uint8Array> => tamperedSignature((await csr({ cn, freshKey: true })).der);
const job = (der: Uint8Array): PoolJob => ({ ca, csr: der, profile: profile(), validity });
const subjectOf = (pem: string): string => new X509Certificate(pem).subject;

describe.runIf(nativeBatchAvailable())("requests verified before in this process", () => {
  it("are issued on the calling thread without a second check; a request the memory does not hold is checked", async () => {
    const held = await broken("held");
    const other = await broken("other");
    rememberVerified(unverifiedKey(held)!);
    expect(subjectOf(issueDerNatively({ ca, der: held, profile: profile(), validity })!.pem)).toBe("CN=held");
    // Not issued natively, and the JavaScript path (SigningPool's, with nothing waiting) refuses it.
    expect(issueDerNatively({ ca, der: other, profile: profile(), validity })).toBeUndefined();
    const pool = new SigningPool({ workers: 0 });
    await expect(pool.issue(job(other))).rejects.toMatchObject({ code: "CSR_SIGNATURE" });
    expect(subjectOf((await pool.issue(job(held))).pem)).toBe("CN=held");
    await pool.close();
  });

  it("are issued on the pool's workers without a second check when the pool has the memory; checked otherwise", async () => {
    const memo = new SharedVerifiedMemo(64);
    const held = await broken("w-held");
    const other = await broken("w-other");
    const good = (await csr({ cn: "w-good", freshKey: true })).der;
    memo.add(SharedVerifiedMemo.digest(held));
    const pool = new SigningPool({ workers: 2, batchSize: 8, startCostMs: 0, workerScript, verifiedMemo: memo });
    const plain = new SigningPool({ workers: 2, batchSize: 8, startCostMs: 0, workerScript });
    try {
      const [a, b, c] = await Promise.allSettled([pool.issue(job(held), 2), pool.issue(job(other), 1), pool.issue(job(good), 0)]);
      expect(pool.counts).toEqual({ inline: 0, workers: 3 });
      expect(a.status === "fulfilled" && subjectOf(a.value.pem)).toBe("CN=w-held");
      expect(b).toMatchObject({ status: "rejected", reason: { code: "CSR_SIGNATURE" } });
      expect(c.status === "fulfilled" && new X509Certificate(c.value.pem).verify(ca.publicKey)).toBe(true);
      // A pool without the memory checks the same bytes, and refuses them.
      await expect(plain.issue(job(held), 1)).rejects.toMatchObject({ code: "CSR_SIGNATURE" });
      expect(plain.counts.workers).toBe(1);
    } finally {
      await Promise.all([pool.close(), plain.close()]);
    }
  });

  it("reach the workers of a pool made where the thread shares a memory (the controllers of `up`)", async () => {
    const memo = new SharedVerifiedMemo(64);
    shareVerifiedMemo(memo);
    const pool = new SigningPool({ workers: 2, startCostMs: 0, workerScript });
    try {
      const held = await broken("shared");
      memo.add(SharedVerifiedMemo.digest(held));
      expect(subjectOf((await pool.issue(job(held), 1)).pem)).toBe("CN=shared");
      expect(pool.counts.workers).toBe(1);
    } finally {
      await pool.close();
    }
  });
});
