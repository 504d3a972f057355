// Signer.signBytes of the CA-backed signers: the verdicts of validate() and the chains of sign(), decided where the pool signs.
import { X509Certificate } from "node:crypto";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { REQUEST_PROBLEM_CODES } from "../../src/controller/controllers/csr-object.js";
import { isPlatformError } from "../../src/errors.js";
import { parseCsr } from "../../src/pki/csr.js";
import { SigningPool } from "../../src/pki/signing-pool.js";
import { createBuiltinSigners } from "../../signers/builtins.js";
import type { CaSigner } from "../../signers/ca-signer.js";
import { createPolicySigner } from "../../signers/policy-signer.js";
import { parsePolicy } from "../../signers/policy-schema.js";
import type { RequestBytes, SigningRequest } from "../../signers/signer.js";
import { csr, tamperedSignature, type CsrOptions } from "../fixtures/csr.js";
import { testCa } from "../fixtures/ca.js";
import { expiredCa, NOW, node, SIGNERS, SIGNERS_CA } from "./fixtures.js";

const generated = await testCa(SIGNERS_CA);
const caKey = new X509Certificate(generated.certPem).publicKey;
const builtins = createBuiltinSigners({ ca: generated.ca, now: () => NOW });
const byName = (name: string) => builtins.find((s) => s.signerName === name)!;
// Workers for any backlog (the default waits for a burst worth their start); they run the compiled rules of dist/.
const pool = new SigningPool({ workers: 2, batchSize: 4, startCostMs: 0 });
afterAll(() => pool.close());

const CLIENT = ["digital signature", "client auth"];
const SERVING = ["digital signature", "server auth"];

/** A row: the signer, the CSR, the spec fields; `true` when accepted. */
type Row = readonly [sentence: string, signerName: string, csr: CsrOptions, usages: readonly string[], accepted: boolean];
const rows: Row[] = [
  ["node-agent client: a node identity", SIGNERS.nodeagentClient, node("a"), CLIENT, true],
  ["node-agent client: a DNS name", SIGNERS.nodeagentClient, node("b", { dns: ["b.example"] }), CLIENT, false],
  ["node-agent client: another organization", SIGNERS.nodeagentClient, { cn: "system:node:c", o: ["dev"] }, CLIENT, false],
  ["node-agent client: a server usage (the common checks pass, the signer's rule refuses)", SIGNERS.nodeagentClient, node("d"), [...CLIENT, "server auth"], false],
  ["node-agent client: an unknown usage (refused by the common checks)", SIGNERS.nodeagentClient, node("e"), ["client auth", "teleportation"], false],
  ["node-agent serving: node names", SIGNERS.nodeagentServing, node("f", { dns: ["f.example"], ip: ["10.0.0.6"] }), SERVING, true],
  ["node-agent serving: no SAN", SIGNERS.nodeagentServing, node("g"), SERVING, false],
  ["API-server client: system:masters", SIGNERS.apiserverClient, { cn: "root", o: ["system:masters"] }, CLIENT, false],
  ["API-server client: any other subject", SIGNERS.apiserverClient, { cn: "alice", o: ["dev"] }, CLIENT, true],
  ["legacy-unknown: anything with known usages", SIGNERS.legacyUnknown, { cn: "anything", email: ["a@example.com"] }, ["server auth"], true],
];

/** The rows' requests as bytes, and as validate() reads them. */
async function requests(): Promise<{ bytes: RequestBytes; read: SigningRequest; row: Row }[]> {
  return Promise.all(
    rows.map(async (row) => {
      const der = (await csr({ ...row[2], freshKey: true })).der;
      const request = { signerName: row[1], usages: row[3], username: "system:node:a" };
      return { bytes: { der, request }, read: { ...request, csr: parseCsr(der) }, row };
    }),
  );
}

describe("Signer.signBytes", () => {
  it.each([
    ["on the pool's workers", { pool, backlog: 8 }],
    ["on the calling thread (no pool)", {}],
  ])("gives validate()'s verdicts word for word and sign()'s chains with their validity, %s", async (_, options) => {
    const all = await requests();
    const before = pool.counts.workers;
    for (const { bytes, read, row } of all) {
      const signer = byName(row[1]);
      const [result] = await signer.signBytes([bytes], NOW, options);
      const verdict = signer.validate(read);
      if (row[4]) {
        expect(verdict).toEqual({ ok: true });
        if (isPlatformError(result)) throw result;
        const leaf = new X509Certificate(result!.pem);
        expect(leaf.verify(caKey)).toBe(true);
        expect([result!.notBefore.getTime(), result!.notAfter.getTime()]).toEqual([Date.parse(leaf.validFrom), Date.parse(leaf.validTo)]);
      } else {
        expect(verdict.ok).toBe(false);
        expect(result).toMatchObject({ code: "SIGNER_REJECTED", message: verdict.ok ? "" : verdict.reason });
      }
    }
    if ("pool" in options) expect(pool.counts.workers - before).toBe(rows.filter((r) => r[4] || r[3].every((u) => u !== "teleportation")).length);
  });

  it("settles a batch request by request: a broken signature reads as CSR_SIGNATURE even where the rules refuse", async () => {
    const signer = byName(SIGNERS.nodeagentClient) as CaSigner;
    const fixtures = await Promise.all([node("ok"), node("refused", { dns: ["x.example"] }), node("broken"), node("broken-refused", { ip: ["10.0.0.9"] })].map((o) => csr({ ...o, freshKey: true })));
    const ders = fixtures.map((f, i) => (i >= 2 ? tamperedSignature(f.der) : f.der));
    const results = await signer.signBytes(ders.map((der) => ({ der, request: { signerName: signer.signerName, usages: CLIENT } })), NOW, { pool, backlog: 4 });
    expect(isPlatformError(results[0])).toBe(false);
    expect(results.slice(1)).toEqual([
      expect.objectContaining({ code: "SIGNER_REJECTED", message: expect.stringMatching(/does not allow DNS subject alternative names/) }),
      expect.objectContaining({ code: "CSR_SIGNATURE" }),
      expect.objectContaining({ code: "CSR_SIGNATURE" }),
    ]);
  });

  it.each([
    ["no CA loaded", async () => ({ current: () => undefined }), "SIGNER_NOT_READY"],
    ["an expired CA", async () => (await expiredCa()).ca, "CA_EXPIRED"],
  ])("refuses before it reports %s, as validate() then sign() do", async (_, ca, code) => {
    const signer = createBuiltinSigners({ ca: await ca(), now: () => NOW }).find((s) => s.signerName === SIGNERS.nodeagentClient)!;
    const ders = await Promise.all([node("fine"), node("refused", { dns: ["r.example"] })].map(async (o) => (await csr({ ...o, freshKey: true })).der));
    const results = await signer.signBytes!(ders.map((der) => ({ der, request: { signerName: signer.signerName, usages: CLIENT } })), NOW, { pool, backlog: 2 });
    expect(results).toEqual([expect.objectContaining({ code }), expect.objectContaining({ code: "SIGNER_REJECTED" })]);
  });

  it("judges the requests of a signer whose rules cannot move (a policy) on the calling thread, with the same verdicts", async () => {
    const policy = parsePolicy({ signerName: "example.com/policy", subject: { permitted: { CN: ["**"], O: ["dev"] } } });
    const signer = createPolicySigner(policy, { ca: generated.ca });
    const good = (await csr({ cn: "p", o: ["dev"], freshKey: true })).der;
    const bad = (await csr({ cn: "q", o: ["ops"], freshKey: true })).der;
    const [a, b] = await signer.signBytes([good, bad].map((der) => ({ der, request: { signerName: signer.signerName, usages: CLIENT } })), NOW, { pool, backlog: 0 });
    expect(new X509Certificate((a as { pem: string }).pem).subject).toContain("CN=p");
    const verdict = signer.validate({ signerName: signer.signerName, usages: CLIENT, csr: parseCsr(bad) });
    expect(b).toMatchObject({ code: "SIGNER_REJECTED", message: verdict.ok ? "" : verdict.reason });
  });

  it.each([
    ["on the pool's workers", { pool, backlog: 8 }],
    ["on the calling thread (no pool)", {}],
  ])("answers any bytes with a request problem, never a throw, and issues a good request after them, %s", async (_, options) => {
    const signer = byName(SIGNERS.nodeagentClient);
    const good = (await csr({ ...node("after-fuzz"), freshKey: true })).der;
    // Random bytes, and a good request with one byte changed, cut short or lengthened.
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 600 }),
      fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 1, max: 255 })).map(([at, x]) => Uint8Array.from(good, (b, i) => (i === at ? b ^ x : b))),
      fc.nat(good.length - 1).map((n) => good.slice(0, n)),
      fc.uint8Array({ minLength: 1, maxLength: 16 }).map((tail) => Uint8Array.from([...good, ...tail])),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(bytes, { minLength: 1, maxLength: 6 }), async (ders) => {
        const results = await signer.signBytes!(ders.map((der) => ({ der, request: { signerName: signer.signerName, usages: CLIENT } })), NOW, options);
        expect(results).toHaveLength(ders.length);
        for (const r of results) {
          // A changed byte may leave a valid request (in a part the signature does not cover): then a chain.
          if (isPlatformError(r)) expect(REQUEST_PROBLEM_CODES.has(r.code), `${r.code}: ${r.message}`).toBe(true);
          else expect(new X509Certificate(r.pem).verify(caKey)).toBe(true);
        }
      }),
      { numRuns: 60 },
    );
    const [after] = await signer.signBytes!([{ der: good, request: { signerName: signer.signerName, usages: CLIENT } }], NOW, options);
    if (isPlatformError(after)) throw after;
    expect(new X509Certificate(after!.pem).verify(caKey)).toBe(true);
  });
});
