// The signing controller with a signing pool: a burst on the workers, requests as bytes in batches, errors decided there.
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { findCondition } from "../../../src/api/conditions.js";
import { SigningPool } from "../../../src/pki/signing-pool.js";
import type { RequestBytes, SignOptions, SigningRequest } from "../../../signers/signer.js";
import { PlatformError } from "../../../src/errors.js";
import { decide, eventsFor, nodeClientCsr } from "./harness.js";
import { tamperedSignature } from "../../fixtures/csr.js";
import { world, issuedBacklog, issued, failed, leafOf } from "./signing-world.js";

describe("SigningController with a signing pool", () => {
  it("signs a backlog on the pool's workers and a lone request on its own thread", async () => {
    // Workers for any backlog: the burst of this test is too small to be worth starting them by default.
    const pool = new SigningPool({ workers: 2, startCostMs: 0 });
    const { w, caKey } = await issuedBacklog("burst", { pool });
    expect(pool.counts.workers).toBeGreaterThan(0);
    expect(pool.started()).toBe(true);
    const before = pool.counts.inline;
    await w.create(await nodeClientCsr(w.h.names, "alone"));
    await decide(w.h, "alone-client", "Approved");
    expect(leafOf(await issued(w, "alone-client")).verify(caKey)).toBe(true);
    expect(pool.counts.inline).toBe(before + 1);
  });

  it("hands a backlog to the signer as bytes (the API server here checked them at create), in batches larger than one sync's: judged, checked and signed on the pool's workers", async () => {
    const pool = new SigningPool({ workers: 2, startCostMs: 0 });
    const refusedDns = "refused.example";
    const { w } = await issuedBacklog("bytes", {
      pool,
      before: async (v) => {
        await v.create(await nodeClientCsr(v.h.names, "refused", { dns: [refusedDns] }));
        await decide(v.h, "refused-client", "Approved");
      },
    });
    const batches = w.signed.map((s) => /^bytes (\d+)$/.exec(s)?.[1]).map(Number);
    // The two syncs took the waiting requests into their batches: fewer signBytes calls than requests.
    expect(batches.reduce((a, b) => a + b, 0)).toBe(13);
    expect(Math.max(...batches)).toBeGreaterThan(2);
    expect(pool.counts.workers).toBeGreaterThan(0);
    const refused = await failed(w, "refused-client");
    expect(findCondition(refused, "Failed")).toMatchObject({
      reason: "SignerValidationFailure",
      message: `signer ${w.h.names.signers.nodeagentClient} does not allow DNS subject alternative names, got ${refusedDns}`,
    });
    // The Event names the window the worker issued: the same as the certificate's.
    const csr = await w.get("bytes-0-client");
    const events = await eventsFor(w.h, csr);
    expect(events.map((e) => e.note)).toEqual([`certificate issued by ${w.h.names.signers.nodeagentClient}, valid until ${new Date(leafOf(csr).validTo).toISOString()}`]);
  });

  it("marks a request whose signature a pool worker finds broken Failed as unreadable, and issues the rest of its batch", async () => {
    const pool = new SigningPool({ workers: 2, startCostMs: 0 });
    const { w } = await issuedBacklog("worker-check", {
      pool,
      before: async (v) => {
        await v.create(await nodeClientCsr(v.h.names, "tampered"));
        await decide(v.h, "tampered-client", "Approved");
      },
      // The API server refuses a broken signature at create: this one breaks on its way to the signer.
      signers: (builtins) =>
        builtins.map((s) => ({
          signerName: s.signerName,
          validate: (r: SigningRequest) => s.validate(r),
          sign: (r: SigningRequest, now: Date, options?: SignOptions) => s.sign(r, now, options),
          trustAnchors: () => s.trustAnchors(),
          ready: () => s.ready(),
          signBytes: (requests: readonly RequestBytes[], now: Date, options?: SignOptions) =>
            s.signBytes!(requests.map((r) => (Buffer.from(r.der).includes("system:node:tampered") ? { ...r, der: tamperedSignature(r.der) } : r)), now, options),
        })),
    });
    const csr = await failed(w, "tampered-client");
    expect(findCondition(csr, "Failed")).toMatchObject({ reason: "SignerValidationFailure", message: "the request cannot be read: CSR signature does not verify with the request's own public key" });
    expect(pool.counts.workers).toBeGreaterThan(0);
  });

  it("marks a request whose bytes the signer finds unreadable while signing Failed, as a checked read would", async () => {
    const w = await world({
      // Requests go as bytes only to a controller with a pool (without one the check would run here anyway).
      pool: new SigningPool({ workers: 2, startCostMs: 0 }),
      signers: (builtins) =>
        builtins.map((s) => ({
          signerName: s.signerName,
          validate: (r: SigningRequest) => s.validate(r),
          trustAnchors: () => s.trustAnchors(),
          ready: () => s.ready(),
          sign: (r: SigningRequest, now: Date, options?: SignOptions) => s.sign(r, now, options),
          signBytes: async (requests: readonly RequestBytes[]) =>
            requests.map(() => new PlatformError("CSR_SIGNATURE", "CSR signature does not verify with the request's own public key")),
        })),
    });
    await w.create(await nodeClientCsr(w.h.names, "node-u"));
    await decide(w.h, "node-u-client", "Approved");
    const csr = await failed(w, "node-u-client");
    expect(findCondition(csr, "Failed")).toMatchObject({ reason: "SignerValidationFailure", message: "the request cannot be read: CSR signature does not verify with the request's own public key" });
    expect(csr.status?.certificate).toBeUndefined();
  });
});
