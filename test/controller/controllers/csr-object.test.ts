// writeCsr: conflicts re-read; a write whose answer was lost but which landed counts as written, once. CsrParser: reads checked or not.
import { describe, expect, it } from "vitest";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import type { ResourceClient } from "../../../src/client/types.js";
import { Buffer } from "node:buffer";
import { CsrParser, writeCsr } from "../../../src/controller/controllers/csr-object.js";
import { parseCsr } from "../../../src/pki/csr.js";
import { unverifiedKey } from "../../../src/pki/csr-signature.js";
import { PlatformError } from "../../../src/errors.js";
import { csr, csrObject, tamperedSignature } from "../../fixtures/csr.js";

const base = (certificate?: string): CertificateSigningRequest =>
  csrObject({ name: "r", metadata: { uid: "u1", resourceVersion: "2" }, signerName: "example.com/s", spec: { request: "" }, ...(certificate !== undefined && { certificate }) });

/** A server that committed the first update but whose answer was lost: the client's retry then conflicts. */
function lostAnswerClient(stored: CertificateSigningRequest): ResourceClient<CertificateSigningRequest> {
  return {
    update: async () => {
      throw new PlatformError("CONFLICT", "the object has been modified");
    },
    get: async () => structuredClone(stored),
  } as unknown as ResourceClient<CertificateSigningRequest>;
}

describe("writeCsr", () => {
  it("sends the change on a copy and leaves the object it was given (the informer's cached copy) as it was", async () => {
    const cached = base();
    cached.status = { conditions: [{ type: "Approved", status: "True", reason: "AutoApproved", message: "", lastUpdateTime: "2026-11-22T00:00:00Z" }] };
    const before = structuredClone(cached);
    const sent: CertificateSigningRequest[] = [];
    const client = { update: async (obj: CertificateSigningRequest) => (sent.push(obj), obj) } as unknown as ResourceClient<CertificateSigningRequest>;
    await writeCsr(cached, { client, subresource: "status", change: (c) => void (c.status!.certificate = "OURS"), settled: () => false });
    await writeCsr(cached, {
      client,
      subresource: "status",
      change: (c) => void (c.status!.conditions = [...(c.status!.conditions ?? []), { type: "Failed", status: "True", reason: "x", message: "y" }]),
      settled: () => false,
    });
    expect(cached).toEqual(before);
    expect(sent[0]!.status).toEqual({ ...before.status, certificate: "OURS" });
    expect(sent[1]!.status!.conditions!.map((c) => c.type)).toEqual(["Approved", "Failed"]);
  });

  it("returns the stored object when the re-read shows this very change landed", async () => {
    const written = await writeCsr(base(), {
      client: lostAnswerClient(base("OURS")),
      subresource: "status",
      change: (c) => void (c.status!.certificate = "OURS"),
      settled: (f) => f.status?.certificate !== undefined,
      landed: (f) => f.status?.certificate === "OURS",
    });
    expect(written?.status?.certificate).toBe("OURS");
  });

  it("returns nothing when someone else's change settled the object", async () => {
    const written = await writeCsr(base(), {
      client: lostAnswerClient(base("THEIRS")),
      subresource: "status",
      change: (c) => void (c.status!.certificate = "OURS"),
      settled: (f) => f.status?.certificate !== undefined,
      landed: (f) => f.status?.certificate === "OURS",
    });
    expect(written).toBeUndefined();
  });

  it("gives up with a retryable CONFLICT when the object keeps changing", async () => {
    await expect(
      writeCsr(base(), {
        client: lostAnswerClient(base()),
        subresource: "status",
        change: (c) => void (c.status!.certificate = "OURS"),
        settled: () => false,
        attempts: 3,
      }),
    ).rejects.toMatchObject({ code: "CONFLICT", retryable: true });
  });
});

describe("CsrParser", () => {
  const object = (pem: string, uid: string) => csrObject({ name: uid, metadata: { uid }, request: pem });

  it("hands a request over as bytes, checked here before or not: the pool's workers skip the check of one this process verified", async () => {
    const parser = new CsrParser();
    const f = await csr({ cn: "fresh", freshKey: true });
    const fresh = object(f.pem, "u-fresh");
    const first = parser.bytes(fresh);
    expect(first).toMatchObject({ request: { signerName: fresh.spec.signerName, usages: fresh.spec.usages } });
    expect(Buffer.from(first.der).equals(Buffer.from(f.der))).toBe(true);
    expect(unverifiedKey(first.der)).toBeDefined();
    // The approver's read checks it; the signer still gets the same bytes (no second reading on this thread).
    expect(parser.request(fresh).csr.subject.commonName).toBe("fresh");
    expect(unverifiedKey(first.der)).toBeUndefined();
    expect(Buffer.from(parser.bytes(fresh).der).equals(Buffer.from(f.der))).toBe(true);
  });

  it("keeps a parse per uid, the least recently read going first past its size (512 by default)", async () => {
    const pems = await Promise.all(Array.from({ length: 3 }, (_, i) => csr({ cn: `kept-${i}` })));
    const parser = new CsrParser(2);
    const [a, b, c] = pems.map((p, i) => object(p.pem, `u-kept-${i}`)) as [ReturnType<typeof object>, ReturnType<typeof object>, ReturnType<typeof object>];
    const first = parser.request(a).csr;
    expect(parser.request(a).csr).toBe(first);
    const bFirst = parser.request(b).csr;
    // a read again, so b is the least recently read when c comes (first in, but not the one to go).
    expect(parser.request(a).csr).toBe(first);
    parser.request(c);
    expect(parser.request(a).csr).toBe(first);
    expect(parser.request(b).csr).not.toBe(bFirst);
    expect(parser.request(b).csr.subject.commonName).toBe("kept-1");
    const none = new CsrParser(0);
    expect(none.request(a).csr).not.toBe(none.request(a).csr);
    // By default a parse outlives 511 others read after it, not 512.
    const after = (others: number) => {
      const parser = new CsrParser();
      const kept = parser.request(a).csr;
      for (let i = 0; i < others; i++) parser.request(object(pems[1]!.pem, `u-many-${i}`));
      return parser.request(a).csr === kept;
    };
    expect(after(511)).toBe(true);
    expect(after(512)).toBe(false);
  });

  it("hands a request with a broken signature over as bytes, and refuses it at the checked read", async () => {
    const bad = tamperedSignature((await csr({ cn: "broken", freshKey: true })).der);
    const pem = `-----BEGIN CERTIFICATE REQUEST-----\n${Buffer.from(bad).toString("base64")}\n-----END CERTIFICATE REQUEST-----\n`;
    const parser = new CsrParser();
    const broken = object(pem, "u-broken");
    expect(Buffer.from(parser.bytes(broken).der).equals(Buffer.from(bad))).toBe(true);
    expect(() => parser.request(broken)).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
    expect(() => new CsrParser().request(broken)).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
    expect(parser.bytes(broken)).toBeDefined();
  });
});
