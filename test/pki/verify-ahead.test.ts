// Self-signatures checked ahead on libuv's pool (verifyAhead, native/verify-async.c): a request that verifies is
// remembered so parseCsr skips it; anything else (a broken signature, bytes the native reader does not take, mutations)
// is left for parseCsr to judge, and no such request is ever remembered as verified.
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { parseCsr } from "../../src/pki/csr.js";
import { unverifiedKey } from "../../src/pki/csr-signature.js";
import { nativeCrypto } from "../../src/pki/native.js";
import { verifyAhead } from "../../src/pki/verify-ahead.js";
import { checkRequestAhead, validateSpec } from "../../src/apiserver/registry/resources/csr-rules.js";
import { groupNames } from "../../src/api/group.js";
import type { ApiObject } from "../../src/api/meta.js";
import { csr, tamperedSignature } from "../fixtures/csr.js";
import { mutation } from "./der-mutations.js";

const fresh = async (cn: string, key: "p256" | "rsa2048" = "p256") => (await csr({ cn, key, freshKey: true })).der;
const remembered = (der: Uint8Array): boolean => unverifiedKey(der) === undefined;

describe.runIf(nativeCrypto?.verifyRequests !== undefined)("signatures checked ahead", () => {
  it("remembers a P-256 and an RSA request that verify, so nothing is left to wait for the next time", async () => {
    for (const der of [await fresh("ahead-ec"), await fresh("ahead-rsa", "rsa2048")]) {
      expect(remembered(der)).toBe(false);
      const wait = verifyAhead(der);
      expect(wait).toBeInstanceOf(Promise);
      await wait;
      expect(remembered(der)).toBe(true);
      expect(verifyAhead(der)).toBeUndefined();
      expect(parseCsr(der).der).toEqual(der);
    }
  });

  it("leaves a broken signature to parseCsr, which refuses it", async () => {
    const bad = tamperedSignature(await fresh("ahead-bad"));
    await verifyAhead(bad);
    expect(remembered(bad)).toBe(false);
    expect(() => parseCsr(bad)).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
  });

  it("checks requests that arrive together, each with its own verdict", async () => {
    const good = await Promise.all(Array.from({ length: 40 }, (_, i) => fresh(`many-${i}`)));
    const bad = good.slice(0, 5).map(tamperedSignature);
    const all = [...good.slice(0, 20), ...bad, ...good.slice(20)];
    await Promise.all(all.map((der) => verifyAhead(der)));
    for (const der of good) expect(remembered(der)).toBe(true);
    for (const der of bad) expect(remembered(der)).toBe(false);
  });

  it("never throws and never remembers a mutated request that parseCsr would refuse (fuzzed)", async () => {
    const base = await fresh("fuzzed");
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 8 }), async (mutations) => {
        const ders = mutations.map((m) => m(base));
        await Promise.all(ders.map((der) => verifyAhead(der)));
        for (const der of ders) {
          if (!remembered(der)) continue;
          // The oracle is the JavaScript reader with OpenSSL's own verification (not the batch's arithmetic).
          expect(() => parseCsr(der, { remember: false })).not.toThrow();
        }
      }),
      { numRuns: 200 },
    );
  });

  it("is what a CSR create waits for: the PEM request of spec.request, and nothing for a field validation refuses", async () => {
    const { pem, der } = await csr({ cn: "create-ahead", freshKey: true });
    const object = (request: unknown) => ({ metadata: {}, spec: { request } }) as unknown as ApiObject;
    const wait = checkRequestAhead(object(Buffer.from(pem).toString("base64")));
    expect(wait).toBeInstanceOf(Promise);
    await wait;
    expect(remembered(der)).toBe(true);
    for (const request of [undefined, 42, "", "not base64!", Buffer.from(der).toString("base64"), Buffer.from("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n").toString("base64")]) {
      expect(checkRequestAhead(object(request))).toBeUndefined();
    }
  });

  it("lets validation read the request read ahead, and only while spec.request is that very text", async () => {
    const names = groupNames();
    const good = Buffer.from((await csr({ cn: "read-ahead", freshKey: true })).pem).toString("base64");
    const badDer = Buffer.from(tamperedSignature((await csr({ cn: "read-ahead-bad", freshKey: true })).der)).toString("base64");
    const bad = Buffer.from(`-----BEGIN CERTIFICATE REQUEST-----\n${badDer.replace(/.{64}/g, "$&\n")}\n-----END CERTIFICATE REQUEST-----\n`).toString("base64");
    const obj = { metadata: {}, spec: { request: good, signerName: names.signers.apiserverClient, usages: ["client auth"] } } as unknown as ApiObject;
    await checkRequestAhead(obj);
    expect(validateSpec(obj, names)).toEqual([]);
    // Changed after the early read (a mutating admission step, say): the new text is decoded and judged.
    (obj.spec as { request: string }).request = bad;
    expect(validateSpec(obj, names)).toEqual([expect.objectContaining({ field: "spec.request", message: expect.stringContaining("signature does not verify") })]);
  });

  it("needs no timer: a create waits for the pool, not for the event loop's timers (fake timers in a test suite)", async () => {
    vi.useFakeTimers();
    try {
      const der = await fresh("fake-timers");
      await verifyAhead(der);
      expect(remembered(der)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("refuses arguments of another shape", () => {
    const bytes = new Uint8Array(10);
    expect(nativeCrypto!.verifyRequests!(bytes, new Uint32Array([11]))).toBeNull();
    expect(nativeCrypto!.verifyRequests!(bytes, new Uint32Array([6, 4]))).toBeNull();
    expect(nativeCrypto!.verifyRequests!(bytes, new Uint32Array(0))).toBeNull();
    expect(nativeCrypto!.verifyRequests!(bytes, new Uint16Array([4]) as unknown as Uint32Array)).toBeNull();
  });
});
