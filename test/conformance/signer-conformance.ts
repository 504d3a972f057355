// The contract every Signer keeps, as one reusable suite: describeSignerConformance(name, makeSigner, cases).
import "reflect-metadata";
import { X509Certificate } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { describe, expect, it, vi } from "vitest";
import { validateIssuedCertificate, validateTrustBundle } from "../../src/pki/bundle.js";
import { readCertificateFacts } from "../../src/pki/ca.js";
import type { KeyType } from "../../src/pki/keys.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import { resolveUsages } from "../../src/pki/usages.js";
import type { CaInput } from "../../signers/ca-backing.js";
import type { Signer, SigningRequest } from "../../signers/signer.js";
import { expiredCa, HOUR, NOW, pemBlocks, rejection, signingRequest, type RequestOptions, SIGNERS_CA } from "../signers/fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { tryRun } from "../fixtures/process.js";

/** What the suite hands makeSigner: the CA to issue from, the cluster maximum and the clock. */
export interface ConformanceEnv {
  readonly ca: CaInput;
  readonly maxDurationSeconds: number;
  readonly now: () => Date;
}

export type MakeSigner = (env: ConformanceEnv) => Signer | Promise<Signer>;

export interface ConformanceCase {
  /** A sentence: "a node client certificate with key encipherment". */
  readonly name: string;
  /** The request, without signerName (the suite addresses it to the signer under test). */
  readonly request: Omit<RequestOptions, "signerName">;
  /** The lifetime the signer gives before the cluster maximum; default the request's expirationSeconds. */
  readonly lifetimeSeconds?: number;
}

export interface ConformanceCases {
  /** Requests the signer must accept; at least one, each with at least one KeyUsage bit. */
  readonly valid: readonly ConformanceCase[];
  /** Requests the signer must refuse; at least one. */
  readonly invalid: readonly ConformanceCase[];
  /** The valid cases ask for CA certificates. */
  readonly issuesCa?: boolean;
  /** Key type of the CA the suite makes (default p256). */
  readonly caKeyType?: KeyType;
}

const CLUSTER_MAX = 365 * 24 * HOUR;
const BACKDATE = 300;
const SHORT = 8 * HOUR;
const NO_CA: CaInput = { current: () => undefined };
const clock = (): Date => new Date(NOW);

/**
 * The reference lifetime rules, written out independently of the implementation: ttl = min(lifetime or the
 * cluster maximum, the cluster maximum); backdate 5 minutes; long certificates end 5 minutes early; clamp to the CA.
 */
export function expectedValidity(lifetime: number | undefined, clusterMax: number, caNotAfter: Date): { notBefore: Date; notAfter: Date } {
  const ttl = Math.min(lifetime ?? clusterMax, clusterMax);
  const end = NOW.getTime() + (ttl < SHORT ? ttl : ttl - BACKDATE) * 1000;
  return { notBefore: new Date(NOW.getTime() - BACKDATE * 1000), notAfter: new Date(Math.min(end, caNotAfter.getTime())) };
}

export function describeSignerConformance(name: string, makeSigner: MakeSigner, cases: ConformanceCases): void {
  describe(`${name} keeps the Signer contract`, () => {
    const dir = tempDir("conformance-");
    const ca = async (): Promise<CaKeyPair> => (await testCa({ ...SIGNERS_CA, keyType: cases.caKeyType ?? "p256" })).ca;
    const make = async (overrides: Partial<ConformanceEnv> = {}): Promise<Signer> =>
      makeSigner({ ca: await ca(), maxDurationSeconds: CLUSTER_MAX, now: clock, ...overrides });
    const requestFor = (signer: Signer, c: ConformanceCase): Promise<SigningRequest> => signingRequest({ ...c.request, signerName: signer.signerName });

    it("has the suite's cases to run", () => {
      expect(cases.valid.length).toBeGreaterThan(0);
      expect(cases.invalid.length).toBeGreaterThan(0);
    });

    it("has a qualified signer name domain/path", async () => {
      expect((await make()).signerName).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+\/[A-Za-z0-9][-\w./]*$/);
    });

    it("validates without side effects, mutation or clock", async () => {
      const signer = await make();
      const all = [...cases.valid.map((v) => [v, true] as const), ...cases.invalid.map((v) => [v, false] as const)];
      const requests = await Promise.all(all.map(([c]) => requestFor(signer, c).then(deepFreeze)));
      vi.useFakeTimers({ toFake: ["Date"] });
      try {
        for (const [i, [c, expected]] of all.entries()) {
          const request = requests[i]!;
          vi.setSystemTime(NOW);
          const first = signer.validate(request);
          vi.setSystemTime(new Date(NOW.getTime() + 400 * 24 * HOUR));
          expect(signer.validate(request), c.name).toEqual(first);
          expect(first.ok, c.name).toBe(expected);
        }
      } finally {
        vi.useRealTimers();
      }
    });

    it.each(cases.valid.map((c) => [c.name, c] as const))("issues a certificate that verifies and matches the request: %s", async (_, c) => {
      const signer = await make();
      const request = await requestFor(signer, c);
      const chain = await signer.sign(request, NOW);
      validateIssuedCertificate(chain);
      const [leafPem = "", ...rest] = pemBlocks(chain);
      expect(verifyWithOpenssl(dir, leafPem, rest, signer.trustAnchors())).toMatch(/: OK\s*$/);

      const leaf = new X509Certificate(leafPem);
      expect(leaf.verify(new X509Certificate((await ca()).certPem).publicKey)).toBe(true);
      const facts = readCertificateFacts(new Uint8Array(leaf.raw));
      expect(Buffer.from(facts.spki).equals(Buffer.from(request.csr.publicKey.spki))).toBe(true);
      expect(Buffer.from(facts.subjectDer).equals(Buffer.from(request.csr.subject.der))).toBe(true);
      const validity = expectedValidity(c.lifetimeSeconds ?? request.expirationSeconds, CLUSTER_MAX, (await ca()).notAfter);
      expect({ notBefore: facts.notBefore, notAfter: facts.notAfter }).toEqual(validity);

      const cert = new x509.X509Certificate(leafPem);
      const keyUsage = cert.getExtension(x509.KeyUsagesExtension);
      expect(keyUsage?.critical).toBe(true);
      expect(keyUsage?.usages).toBe(resolveUsages(request.usages).keyUsage);
      const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
      expect(eku?.usages ?? []).toEqual(resolveUsages(request.usages).extKeyUsage);
      const basic = cert.getExtension(x509.BasicConstraintsExtension);
      expect(basic?.critical).toBe(true);
      expect(basic?.ca).toBe(cases.issuesCa === true);
      expect(cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toMatch(/^[0-9a-f]{40}$/);
      expect(cert.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(Buffer.from((await ca()).subjectKeyId).toString("hex"));
    });

    it("never issues beyond the cluster maximum signing duration", async () => {
      const signer = await make({ maxDurationSeconds: 660 });
      const request = await requestFor(signer, cases.valid[0]!);
      const facts = leafFacts(await signer.sign(request, NOW));
      const lifetime = cases.valid[0]!.lifetimeSeconds ?? request.expirationSeconds;
      expect(facts.notAfter).toEqual(expectedValidity(lifetime, 660, (await ca()).notAfter).notAfter);
      expect(facts.notAfter.getTime() - NOW.getTime()).toBeLessThanOrEqual(660_000);
    });

    it("ends certificates no later than the CA's NotAfter", async () => {
      const shortCa = (await testCa({ keyType: cases.caKeyType ?? "p256", commonName: "short-lived test CA", madeAt: NOW, lifetimeSeconds: HOUR })).ca;
      const signer = await make({ ca: shortCa });
      const request = await requestFor(signer, cases.valid[0]!);
      const facts = leafFacts(await signer.sign(request, NOW));
      expect(facts.notAfter.getTime()).toBeLessThanOrEqual(shortCa.notAfter.getTime());
      const lifetime = cases.valid[0]!.lifetimeSeconds ?? request.expirationSeconds;
      expect(facts.notAfter).toEqual(expectedValidity(lifetime, CLUSTER_MAX, shortCa.notAfter).notAfter);
    });

    it.each(cases.invalid.map((c) => [c.name, c] as const))("refuses in validate and in sign with SIGNER_REJECTED: %s", async (_, c) => {
      const signer = await make();
      const request = await requestFor(signer, c);
      const validation = signer.validate(request);
      expect(validation.ok).toBe(false);
      const reason = validation.ok ? "" : validation.reason;
      expect(reason.length).toBeGreaterThan(10);
      const error = await rejection(signer.sign(request, NOW));
      expect([error.code, error.retryable, error.message]).toEqual(["SIGNER_REJECTED", false, reason]);
    });

    it("refuses a request addressed to another signer", async () => {
      const signer = await make();
      const request = { ...(await requestFor(signer, cases.valid[0]!)), signerName: "elsewhere.example/other" };
      expect(signer.validate(request).ok).toBe(false);
      expect((await rejection(signer.sign(request, NOW))).code).toBe("SIGNER_REJECTED");
    });

    it("gives a retryable error while its CA is expired", async () => {
      const signer = await make({ ca: (await expiredCa()).ca });
      const error = await rejection(signer.sign(await requestFor(signer, cases.valid[0]!), NOW));
      expect([error.code, error.retryable]).toEqual(["CA_EXPIRED", true]);
      expect(signer.ready()).toBe(false);
    });

    it("publishes CA certificates as its trust anchors", async () => {
      const anchors = (await make()).trustAnchors();
      expect(anchors.length).toBeGreaterThan(0);
      expect(validateTrustBundle(anchors.join("")).certificates).toHaveLength(anchors.length);
      for (const anchor of anchors) expect(new X509Certificate(anchor).ca).toBe(true);
    });

    it("is ready with a valid CA and not ready, nor signing, without one", async () => {
      expect((await make()).ready()).toBe(true);
      const signer = await make({ ca: NO_CA });
      expect(signer.ready()).toBe(false);
      const error = await rejection(signer.sign(await requestFor(signer, cases.valid[0]!), NOW));
      expect([error.code, error.retryable]).toEqual(["SIGNER_NOT_READY", true]);
    });
  });
}

function leafFacts(chain: string): { notBefore: Date; notAfter: Date } {
  return readCertificateFacts(new Uint8Array(new X509Certificate(pemBlocks(chain)[0]!).raw));
}

/** openssl verify at the fake clock's time, trusting the anchors (which may be intermediates) and nothing else. */
function verifyWithOpenssl(dir: string, leaf: string, untrusted: readonly string[], anchors: readonly string[]): string {
  const files = { leaf: join(dir, "leaf.pem"), anchors: join(dir, "anchors.pem"), chain: join(dir, "chain.pem") };
  writeFileSync(files.leaf, leaf);
  writeFileSync(files.anchors, anchors.join(""));
  writeFileSync(files.chain, untrusted.join(""));
  const args = ["verify", "-x509_strict", "-partial_chain", "-attime", String(NOW.getTime() / 1000), "-CAfile", files.anchors];
  if (untrusted.length > 0) args.push("-untrusted", files.chain);
  const { status, out } = tryRun("openssl", [...args, files.leaf]);
  if (status !== 0) throw new Error(`openssl verify failed: ${out}`);
  return out;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !ArrayBuffer.isView(value) && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
