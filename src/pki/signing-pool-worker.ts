// Worker side of SigningPool (and its in-process path): parse, verify and issue batches of jobs for the CAs it was sent.
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { isPlatformError, PlatformError } from "../errors.js";
import { parseCsr } from "./csr.js";
import { Issuer } from "./issue.js";
import type { CaKeyPair, CertificateProfile, Extension, ParsedCsr, Validity } from "./types.js";

/** Marks threads started by SigningPool, so importing this module elsewhere starts nothing. */
export const POOL_WORKER_KIND = "platform-ca-signing-pool";

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
 * profile, signer extensions (-1 none) and validity window (ms).
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
}

/** Results packed the same way: DER back to back (`derEnds`), PEM texts back to back, 32 hex digits of serial per job. */
export interface WireResults {
  readonly der: Uint8Array;
  readonly derEnds: Uint32Array;
  readonly pem: string;
  readonly pemEnds: Uint32Array;
  readonly serials: string;
  readonly errors: Readonly<Record<number, { readonly code: string; readonly message: string }>>;
}

const SERIAL_HEX = 32;

export type ToWorker = { readonly type: "ca"; readonly id: number; readonly ca: WireCa } | { readonly type: "forget"; readonly id: number } | { readonly type: "batch"; readonly id: number; readonly batch: WireBatch };
export type FromWorker = { readonly type: "results"; readonly id: number; readonly results: WireResults };

/** A CSR-shaped view of a WireParsed: the fields Issuer reads. */
function fromWire(p: WireParsed): ParsedCsr {
  return { der: p.subjectDer, subject: { der: p.subjectDer }, publicKey: { spki: p.spki }, extensions: p.extensions } as unknown as ParsedCsr;
}

/** The CA of a job: an Issuer, or the error building it gave (which then fails that CA's jobs only). */
export type IssuerSlot = Issuer | PlatformError;

export function issuerFor(ca: WireCa): IssuerSlot {
  try {
    return new Issuer(ca as CaKeyPair);
  } catch (err) {
    return isPlatformError(err) ? err : new PlatformError("CA_INVALID", `signing worker cannot use the CA: ${String(err)}`);
  }
}

/** Parse + verify + issue for every job; a bad CSR fails its own job only. */
export function processBatch(issuers: ReadonlyMap<number, IssuerSlot>, batch: WireBatch): WireResults {
  const count = batch.csrEnds.length;
  const ders: Uint8Array[] = [];
  const pems: string[] = [];
  const serials: string[] = [];
  const errors: Record<number, { code: string; message: string }> = {};
  const derEnds = new Uint32Array(count);
  const pemEnds = new Uint32Array(count);
  let derAt = 0;
  let pemAt = 0;
  let validity: Validity | undefined;
  for (let i = 0; i < count; i++) {
    try {
      const issuer = issuers.get(batch.caIds[i]!);
      if (issuer === undefined) throw new PlatformError("SIGNER_NOT_READY", "no CA loaded in the signing worker");
      if (issuer instanceof PlatformError) throw issuer;
      const profile = batch.profiles[batch.profileIndex[i]!];
      if (profile === undefined) throw new PlatformError("INTERNAL", `batch has no profile ${batch.profileIndex[i]}`);
      const parsed = batch.parsed[i];
      // A worker thread sees each request once: the verified-request memory could only cost there.
      const csr = parsed !== undefined ? fromWire(parsed) : parseCsr(batch.texts[i] ?? batch.csrBytes.subarray(i === 0 ? 0 : batch.csrEnds[i - 1]!, batch.csrEnds[i]!), { remember: isMainThread });
      const from = batch.times[2 * i]!;
      const to = batch.times[2 * i + 1]!;
      // Jobs of one batch usually share their window: one validity object for a run of equal ones.
      if (validity === undefined || validity.notBefore.getTime() !== from || validity.notAfter.getTime() !== to) {
        validity = { notBefore: new Date(from), notAfter: new Date(to) };
      }
      const ext = batch.extensionIndex[i]!;
      const cert = issuer.issue({ csr, profile, validity, ...(ext >= 0 && { signerExtensions: batch.extensionSets[ext]! }) });
      ders.push(cert.der);
      pems.push(cert.pem);
      serials.push(cert.serialHex);
      derAt += cert.der.length;
      pemAt += cert.pem.length;
    } catch (err) {
      errors[i] = isPlatformError(err)
        ? { code: err.code, message: err.message }
        : { code: "INTERNAL", message: err instanceof Error ? err.message : String(err) };
      serials.push(" ".repeat(SERIAL_HEX));
    }
    derEnds[i] = derAt;
    pemEnds[i] = pemAt;
  }
  const der = new Uint8Array(derAt);
  let at = 0;
  for (const d of ders) {
    der.set(d, at);
    at += d.length;
  }
  return { der, derEnds, pem: pems.join(""), pemEnds, serials: serials.join(""), errors };
}

/** The certificate of job i, or its error. */
export function resultAt(results: WireResults, i: number): { readonly der: Uint8Array; readonly pem: string; readonly serialHex: string } | { readonly code: string; readonly message: string } {
  const error = results.errors[i];
  if (error !== undefined) return error;
  const derStart = i === 0 ? 0 : results.derEnds[i - 1]!;
  const pemStart = i === 0 ? 0 : results.pemEnds[i - 1]!;
  return {
    der: results.der.subarray(derStart, results.derEnds[i]!),
    pem: results.pem.slice(pemStart, results.pemEnds[i]!),
    serialHex: results.serials.slice(i * SERIAL_HEX, (i + 1) * SERIAL_HEX),
  };
}

/** Typed arrays of a packed message, to transfer rather than copy. */
export function transferList(...arrays: readonly ArrayBufferView[]): ArrayBuffer[] {
  return arrays.map((a) => a.buffer as ArrayBuffer);
}

function serve(port: NonNullable<typeof parentPort>): void {
  const issuers = new Map<number, IssuerSlot>();
  port.on("message", (msg: ToWorker) => {
    if (msg.type === "ca") return void issuers.set(msg.id, issuerFor(msg.ca));
    if (msg.type === "forget") return void issuers.delete(msg.id);
    const results = processBatch(issuers, msg.batch);
    // Certificates travel back without a copy.
    port.postMessage({ type: "results", id: msg.id, results } satisfies FromWorker, transferList(results.der, results.derEnds, results.pemEnds));
  });
}

if (!isMainThread && parentPort && (workerData as { kind?: string } | null)?.kind === POOL_WORKER_KIND) serve(parentPort);
