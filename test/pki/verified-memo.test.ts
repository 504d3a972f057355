// The verified-CSR memo shared between threads: what one thread verified another skips, and only verdicts go in.
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { parseCsr } from "../../src/pki/csr.js";
import { shareVerifiedMemo } from "../../src/pki/csr-signature.js";
import { SharedVerifiedMemo } from "../../src/pki/verified-memo.js";
import { csr } from "../fixtures/csr.js";

/** The request with the last byte of its signature changed: well-formed, but the signature does not verify. */
async function forged(): Promise<Uint8Array> {
  const der = Uint8Array.from((await csr({ key: "ed25519", cn: "forged", freshKey: true })).der);
  der[der.length - 1]! ^= 0x01;
  return der;
}

describe("SharedVerifiedMemo", () => {
  afterEach(() => shareVerifiedMemo(undefined));

  it("remembers digests across views of one buffer, and forgets a set's oldest digest when a fifth takes its place", () => {
    const a = new SharedVerifiedMemo(1);
    const b = new SharedVerifiedMemo(a.buffer);
    const digests = ["one", "two", "three", "four", "five", "six"].map((s) => SharedVerifiedMemo.digest(Buffer.from(s)));
    const [one, two, three, four, five, six] = digests as [Buffer, Buffer, Buffer, Buffer, Buffer, Buffer];
    expect(b.has(one)).toBe(false);
    a.add(one);
    expect(b.has(one)).toBe(true);
    for (const d of [two, three, four]) b.add(d);
    // Four ways: the first three newer digests leave the oldest in place; adding one already there changes nothing.
    b.add(two);
    expect([one, two, three, four].map((d) => a.has(d))).toEqual([true, true, true, true]);
    b.add(five);
    expect([one, two, three, four, five].map((d) => a.has(d))).toEqual([false, true, true, true, true]);
    a.add(six);
    expect([two, three, four, five, six].map((d) => b.has(d))).toEqual([false, true, true, true, true]);
    expect(() => new SharedVerifiedMemo(new SharedArrayBuffer(128))).toThrow(/whole sets/);
    expect(() => new SharedVerifiedMemo(0)).toThrow(/sets/);
  });

  it("keeps a request through thousands of later ones, as the approver of a burst needs (most of 8,000 after 8,000 more)", () => {
    const memo = new SharedVerifiedMemo();
    const digest = (i: number) => SharedVerifiedMemo.digest(Buffer.from(`request ${i}`));
    for (let i = 0; i < 16_000; i++) memo.add(digest(i));
    let kept = 0;
    for (let i = 0; i < 8_000; i++) if (memo.has(digest(i))) kept++;
    // One way per set would keep ~61% of these (e^-0.49); four ways keep all but the sets that took five or more.
    expect(kept).toBeGreaterThan(7_900);
  });

  it("refuses a forged request unless the memo says those exact bytes verified, and never records a failure", async () => {
    const der = await forged();
    const memo = new SharedVerifiedMemo();
    shareVerifiedMemo(memo);
    expect(() => parseCsr(der)).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
    expect(memo.has(SharedVerifiedMemo.digest(der))).toBe(false);
    // Only this process's verifier writes the memo; were it to hold these bytes, the check would be skipped.
    memo.add(SharedVerifiedMemo.digest(der));
    expect(parseCsr(der).der).toEqual(der);
    // The bytes themselves still do not verify.
    expect(() => parseCsr(der, { remember: false })).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
  });

  it("carries a verification made on another thread (the built modules, as the controller thread of up loads them)", async () => {
    const { der } = await csr({ key: "p256", cn: "from-a-worker", freshKey: true });
    const memo = new SharedVerifiedMemo();
    const dist = new URL("../../dist/src/pki/", import.meta.url).href;
    const worker = new Worker(
      `const { workerData, parentPort } = require("node:worker_threads");
       Promise.all([import(workerData.dist + "csr.js"), import(workerData.dist + "csr-signature.js"), import(workerData.dist + "verified-memo.js")]).then(([csr, signature, memo]) => {
         signature.shareVerifiedMemo(new memo.SharedVerifiedMemo(workerData.buffer));
         csr.parseCsr(workerData.der);
         parentPort.postMessage("done");
       });`,
      { eval: true, workerData: { buffer: memo.buffer, der, dist } },
    );
    await new Promise((resolve, reject) => worker.once("message", resolve).once("error", reject));
    await worker.terminate();
    expect(memo.has(SharedVerifiedMemo.digest(der))).toBe(true);
  });
});
