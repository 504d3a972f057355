// Builders for signer tests: a fixed clock, the signer CA options, parsed signing requests, CA files, tool runs.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { isPlatformError, type PlatformError } from "../../src/errors.js";
import { caFromPem, type GeneratedCa } from "../../src/pki/ca.js";
import { parseCsr } from "../../src/pki/csr.js";
import { decodePem, encodePem } from "../../src/pki/pem.js";
import { issueCertificate } from "../../src/pki/issue.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import { resolveUsages } from "../../src/pki/usages.js";
import { writePrivateKeyFile } from "../../src/pki/keys.js";
import type { Signer, SigningRequest } from "../../signers/signer.js";
import { csr, type CsrOptions } from "../fixtures/csr.js";
import { testCa, type TestCaOptions } from "../fixtures/ca.js";

/** The instant every test clock stands at. */
export const NOW = new Date("2031-06-01T00:00:00Z");
export const HOUR = 3600;
export const DAY = 24 * HOUR;

export const SIGNERS = groupNames().signers;

/** The CA options of the signer tests: made a day before NOW, so valid at NOW for years. */
export const SIGNERS_CA: TestCaOptions = { commonName: "signers test CA", madeAt: new Date(NOW.getTime() - DAY * 1000) };

/** A CA whose NotAfter has passed at NOW. */
export function expiredCa(): Promise<GeneratedCa> {
  return testCa({ ...SIGNERS_CA, commonName: "expired test CA", madeAt: new Date(NOW.getTime() - 2 * DAY * 1000), lifetimeSeconds: HOUR });
}

let intermediate: Promise<{ readonly root: GeneratedCa; readonly ca: CaKeyPair }> | undefined;

/** An issuing CA below the SIGNERS_CA root; its CaKeyPair carries the root as chainPem. */
export function intermediateCa(): Promise<{ readonly root: GeneratedCa; readonly ca: CaKeyPair }> {
  intermediate ??= (async () => {
    const root = await testCa(SIGNERS_CA);
    const request = await csr({ cn: "signers test intermediate CA", key: "p384", requestCa: true, freshKey: true });
    const issued = issueCertificate({
      csr: parseCsr(request.pem),
      profile: { usages: resolveUsages(["cert sign", "crl sign", "digital signature"]), isCa: true, pathLen: 0, includeSans: false },
      validity: { notBefore: new Date(NOW.getTime() - DAY * 1000), notAfter: new Date(NOW.getTime() + 365 * DAY * 1000) },
      ca: root.ca,
    });
    return { root, ca: caFromPem(issued.pem + root.certPem, request.keyPem, { intermediates: true }) };
  })();
  return intermediate;
}

export interface RequestOptions extends CsrOptions {
  readonly signerName?: string;
  readonly usages?: readonly string[];
  readonly expirationSeconds?: number;
}

/** A SigningRequest from a real CSR; usages default to a typical client certificate. */
export async function signingRequest(o: RequestOptions = {}): Promise<SigningRequest> {
  const { signerName = SIGNERS.legacyUnknown, usages = ["digital signature", "key encipherment", "client auth"], expirationSeconds, ...csrOptions } = o;
  const fixture = await csr(csrOptions);
  return {
    signerName,
    csr: parseCsr(fixture.pem),
    usages,
    ...(expirationSeconds !== undefined && { expirationSeconds }),
  };
}

/** A node identity's CSR options: CN system:node:<name>, O system:nodes. */
export function node(name = "worker-1", extra: CsrOptions = {}): CsrOptions {
  return { cn: `system:node:${name}`, o: ["system:nodes"], ...extra };
}

/** Writes a CA's certificate and key (0600) into `dir`. */
export async function writeCaFiles(dir: string, ca: GeneratedCa, stem = "ca"): Promise<{ certFile: string; keyFile: string }> {
  const certFile = join(dir, `${stem}.crt`);
  const keyFile = join(dir, `${stem}.key`);
  writeFileSync(certFile, ca.certPem);
  await writePrivateKeyFile(keyFile, ca.keyPem);
  return { certFile, keyFile };
}

/** The certificates of a PEM chain, in order, read by the product's PEM codec (which refuses anything else in it). */
export function pemBlocks(text: string): string[] {
  return decodePem(text, { label: "CERTIFICATE" }).map((b) => encodePem(b.label, b.der));
}

/** The error a promise rejects with; fails the test when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<PlatformError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isPlatformError(error), `expected a PlatformError, got ${String(error)}`).toBe(true);
  return error as PlatformError;
}

/** One rule-table row: a sentence, the request, and `true` for accepted or the pattern the refusal must match. */
export type Verdict = readonly [sentence: string, request: RequestOptions, expected: true | RegExp];

/** Runs validate on a real request and checks the verdict; refusals must explain themselves. */
export async function expectVerdict(signer: Signer, request: RequestOptions, expected: true | RegExp): Promise<void> {
  const validation = signer.validate(await signingRequest({ signerName: signer.signerName, ...request }));
  if (expected === true) {
    expect(validation).toEqual({ ok: true });
  } else {
    expect(validation.ok).toBe(false);
    expect(validation.ok ? "" : validation.reason).toMatch(expected);
  }
}
