// The verified-CSR memo shared between threads: what one thread verified another skips, and only verdicts go in.
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { parseCsr, shareVerifiedMemo } from "../../src/pki/csr.js";
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

  it("remembers digests across views of one buffer, and forgets a slot's digest when another takes it", () => {
    const a = new SharedVerifiedMemo(1);
    const b = new SharedVerifiedMemo(a.buffer);
    const one = SharedVerifiedMemo.digest(Buffer.from("one"));
    const two = SharedVerifiedMemo.digest(Buffer.from("two"));
    expect(b.has(one)).toBe(false);
    a.add(one);
    expect(b.has(one)).toBe(true);
    b.add(two);
    expect(a.has(one)).toBe(false);
    expect(a.has(two)).toBe(true);
    expect(() => new SharedVerifiedMemo(new SharedArrayBuffer(33))).toThrow(/32-byte slots/);
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
       Promise.all([import(workerData.dist + "csr.js"), import(workerData.dist + "verified-memo.js")]).then(([csr, memo]) => {
         csr.shareVerifiedMemo(new memo.SharedVerifiedMemo(workerData.buffer));
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
