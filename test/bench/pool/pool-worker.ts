// Worker side of SigningPool: parses, verifies and issues batches of CSRs with a CA imported once per thread.
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { isPlatformError, PlatformError } from "../../../src/errors.js";
import { caFromPem } from "../../../src/pki/ca.js";
import { parseCsr } from "../../../src/pki/csr.js";
import { Issuer } from "../../../src/pki/issue.js";
import type { CertificateProfile, Validity } from "../../../src/pki/types.js";

/** Marks threads started by SigningPool, so importing this module elsewhere starts nothing. */
export const POOL_WORKER_KIND = "platform-ca-signing-pool";

export interface WireCa {
  readonly certPem: string;
  readonly keyPem: string;
}

/**
 * A batch of jobs packed into a few typed arrays, so a message costs a handful of transfers instead of one
 * structured-clone object per job: CSR bytes back to back (`csrEnds[i]` is where job i ends), a string CSR (PEM
 * text) in `texts[i]` with an empty byte range, the profile index and the validity window (ms) of each job.
 */
export interface WireBatch {
  readonly csrBytes: Uint8Array;
  readonly csrEnds: Uint32Array;
  readonly texts: Readonly<Record<number, string>>;
  readonly profileIndex: Uint16Array;
  /** notBefore, notAfter (ms since the epoch) of each job. */
  readonly times: Float64Array;
  readonly profiles: readonly CertificateProfile[];
}

/**
 * Results packed the same way: certificate DER back to back (`derEnds`), their PEM texts back to back (`pemEnds`),
 * 32 hex digits of serial per job, and the failed jobs (their ranges are empty).
 */
export interface WireResults {
  readonly der: Uint8Array;
  readonly derEnds: Uint32Array;
  readonly pem: string;
  readonly pemEnds: Uint32Array;
  readonly serials: string;
  readonly errors: Readonly<Record<number, { readonly code: string; readonly message: string }>>;
}

const SERIAL_HEX = 32;

export type ToWorker = { readonly type: "ca"; readonly ca: WireCa } | { readonly type: "batch"; readonly id: number; readonly batch: WireBatch };
export type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "ca-error"; readonly code: string; readonly message: string }
  | { readonly type: "results"; readonly id: number; readonly results: WireResults };

export function issuerFor(ca: WireCa): Issuer {
  return new Issuer(caFromPem(ca.certPem, ca.keyPem));
}

/** Parse + verify + issue for every job; a bad CSR fails its own job only. */
export function processBatch(issuer: Issuer | undefined, batch: WireBatch): WireResults {
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
      if (issuer === undefined) throw new PlatformError("SIGNER_NOT_READY", "no CA loaded in the signing worker");
      const profile = batch.profiles[batch.profileIndex[i]!];
      if (profile === undefined) throw new PlatformError("INTERNAL", `batch has no profile ${batch.profileIndex[i]}`);
      const input = batch.texts[i] ?? batch.csrBytes.subarray(i === 0 ? 0 : batch.csrEnds[i - 1]!, batch.csrEnds[i]!);
      // A worker thread sees each request once: the verified-request memory could only cost there.
      const csr = parseCsr(input, { remember: isMainThread });
      const from = batch.times[2 * i]!;
      const to = batch.times[2 * i + 1]!;
      // Jobs of one batch usually share their window: one validity object for a run of equal ones.
      if (validity === undefined || validity.notBefore.getTime() !== from || validity.notAfter.getTime() !== to) {
        validity = { notBefore: new Date(from), notAfter: new Date(to) };
      }
      const cert = issuer.issue({ csr, profile, validity });
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
  let issuer: Issuer | undefined;
  port.on("message", (msg: ToWorker) => {
    if (msg.type === "ca") {
      try {
        issuer = issuerFor(msg.ca);
        port.postMessage({ type: "ready" } satisfies FromWorker);
      } catch (err) {
        const e = isPlatformError(err) ? err : new PlatformError("CA_INVALID", String(err));
        port.postMessage({ type: "ca-error", code: e.code, message: e.message } satisfies FromWorker);
      }
      return;
    }
    const results = processBatch(issuer, msg.batch);
    // Certificates travel back without a copy.
    port.postMessage({ type: "results", id: msg.id, results } satisfies FromWorker, transferList(results.der, results.derEnds, results.pemEnds));
  });
}

if (!isMainThread && parentPort && (workerData as { kind?: string } | null)?.kind === POOL_WORKER_KIND) serve(parentPort);
