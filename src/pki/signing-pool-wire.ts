// The signing pool's messages: a batch of jobs packed into a few typed arrays one way, the certificates the other.
import { Buffer } from "node:buffer";
import type { PortableRules, RequestFields } from "./pool-rules.js";
import type { PoolJob } from "./signing-pool-types.js";
import type { CaKeyPair, CertificateProfile, Extension } from "./types.js";

/**
 * A CA as a worker receives it: the key pair with its private key as a KeyObject, which postMessage clones into the
 * worker's memory without an export to PEM text (a token key, `keySigner`, never gets here).
 */
export type WireCa = Omit<CaKeyPair, "keySigner">;

/** What the issuer reads of a CSR the caller already parsed (and verified): subject, key, requested extensions. */
export interface WireParsed {
  readonly subjectDer: Uint8Array;
  readonly spki: Uint8Array;
  readonly extensions: readonly Extension[];
}

/**
 * A batch of jobs packed into a few typed arrays, so a message costs a handful of transfers instead of one
 * structured-clone object per job: CSR bytes back to back (`csrEnds[i]` is where job i ends; they are parsed and
 * their signature verified here), PEM text in `texts[i]`, an already parsed CSR in `parsed[i]`, then per job its CA,
 * profile, signer extensions (-1 none) and validity window (ms); a DER job with rules (pool-rules.ts) has their id in
 * `ruleIds[i]` (0 none) and the spec fields they read in `requests[i]`.
 */
export interface WireBatch {
  readonly csrBytes: Uint8Array;
  readonly csrEnds: Uint32Array;
  readonly texts: Readonly<Record<number, string>>;
  readonly parsed: Readonly<Record<number, WireParsed>>;
  readonly caIds: Uint32Array;
  readonly profileIndex: Uint16Array;
  readonly extensionIndex: Int16Array;
  /** notBefore, notAfter (ms since the epoch) of each job. */
  readonly times: Float64Array;
  readonly profiles: readonly CertificateProfile[];
  readonly extensionSets: readonly (readonly Uint8Array[])[];
  readonly ruleIds: Uint32Array;
  readonly requests: Readonly<Record<number, RequestFields>>;
}

/**
 * Results packed the same way: DER back to back (`derEnds`), PEM texts back to back as ASCII bytes (`pemEnds`: bytes
 * travel without a copy, where a string is copied twice), 32 hex digits of serial per job.
 */
export interface WireResults {
  readonly der: Uint8Array;
  readonly derEnds: Uint32Array;
  readonly pem: Uint8Array;
  readonly pemEnds: Uint32Array;
  readonly serials: string;
  readonly errors: Readonly<Record<number, { readonly code: string; readonly message: string }>>;
}

export const SERIAL_HEX = 32;

export type ToWorker =
  | { readonly type: "ca"; readonly id: number; readonly ca: WireCa }
  | { readonly type: "rules"; readonly id: number; readonly rules: PortableRules }
  | { readonly type: "forget"; readonly id: number }
  | { readonly type: "batch"; readonly id: number; readonly batch: WireBatch };
export type FromWorker = { readonly type: "results"; readonly id: number; readonly results: WireResults };

/** The ids a batch names its CAs and rules by; each is sent to the worker it goes to before the batch. */
export interface BatchIds {
  ca(ca: CaKeyPair): number;
  rules(rules: PortableRules): number;
}

/** `jobs` as one batch message. */
export function packBatch(jobs: readonly PoolJob[], ids: BatchIds): WireBatch {
  const count = jobs.length;
  const profiles: CertificateProfile[] = [];
  const extensionSets: (readonly Uint8Array[])[] = [];
  const texts: Record<number, string> = {};
  const parsed: Record<number, WireParsed> = {};
  const csrEnds = new Uint32Array(count);
  const caIds = new Uint32Array(count);
  const profileIndex = new Uint16Array(count);
  const extensionIndex = new Int16Array(count);
  const times = new Float64Array(2 * count);
  const ruleIds = new Uint32Array(count);
  const requests: Record<number, RequestFields> = {};
  let size = 0;
  for (const job of jobs) if (job.csr instanceof Uint8Array) size += job.csr.length;
  const csrBytes = new Uint8Array(size);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const job = jobs[i]!;
    if (typeof job.csr === "string") texts[i] = job.csr;
    else if (job.csr instanceof Uint8Array) {
      csrBytes.set(job.csr, at);
      at += job.csr.length;
      if (job.check !== undefined) {
        ruleIds[i] = ids.rules(job.check.rules.portable);
        requests[i] = job.check.request;
      }
    } else parsed[i] = { subjectDer: job.csr.subject.der, spki: job.csr.publicKey.spki, extensions: job.csr.extensions };
    csrEnds[i] = at;
    caIds[i] = ids.ca(job.ca);
    let index = profiles.indexOf(job.profile);
    if (index < 0) index = profiles.push(job.profile) - 1;
    profileIndex[i] = index;
    extensionIndex[i] = job.signerExtensions === undefined ? -1 : indexOrPush(extensionSets, job.signerExtensions);
    times[2 * i] = job.validity.notBefore.getTime();
    times[2 * i + 1] = job.validity.notAfter.getTime();
  }
  return { csrBytes, csrEnds, texts, parsed, caIds, profileIndex, extensionIndex, times, profiles, extensionSets, ruleIds, requests };
}

function indexOrPush<T>(list: T[], item: T): number {
  const index = list.indexOf(item);
  return index >= 0 ? index : list.push(item) - 1;
}

/** All the PEM texts of a result message as one string (made once per message: a slice of it is then each one's). */
export function pemTexts(results: WireResults): string {
  const pem = results.pem;
  return Buffer.from(pem.buffer, pem.byteOffset, pem.byteLength).toString("latin1");
}

/** The certificate of job i, or its error; `texts` is pemTexts(results). */
export function resultAt(
  results: WireResults,
  i: number,
  texts = pemTexts(results),
): { readonly der: Uint8Array; readonly pem: string; readonly serialHex: string } | { readonly code: string; readonly message: string } {
  const error = results.errors[i];
  if (error !== undefined) return error;
  const derStart = i === 0 ? 0 : results.derEnds[i - 1]!;
  const pemStart = i === 0 ? 0 : results.pemEnds[i - 1]!;
  return {
    der: results.der.subarray(derStart, results.derEnds[i]!),
    pem: texts.slice(pemStart, results.pemEnds[i]!),
    serialHex: results.serials.slice(i * SERIAL_HEX, (i + 1) * SERIAL_HEX),
  };
}

/** The buffers behind a packed message, each once, to transfer rather than copy. */
export function transferList(...arrays: readonly ArrayBufferView[]): ArrayBuffer[] {
  return [...new Set(arrays.map((a) => a.buffer as ArrayBuffer))];
}
