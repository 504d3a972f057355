// Worker side of SigningPool: parses, verifies and issues batches of CSRs with a CA imported once per thread.
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { isPlatformError, PlatformError } from "../errors.js";
import { caFromPem } from "./ca.js";
import { parseCsr } from "./csr.js";
import { Issuer } from "./issue.js";
import type { CertificateProfile } from "./types.js";

/** Marks threads started by SigningPool, so importing this module elsewhere starts nothing. */
export const POOL_WORKER_KIND = "platform-ca-signing-pool";

export interface WireCa {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface WireJob {
  readonly csr: string | Uint8Array;
  /** Index into the batch's profiles. */
  readonly profile: number;
  readonly notBefore: number;
  readonly notAfter: number;
}

export interface WireBatch {
  readonly jobs: readonly WireJob[];
  readonly profiles: readonly CertificateProfile[];
}

export type WireResult =
  | { readonly ok: true; readonly der: Uint8Array; readonly pem: string; readonly serialHex: string; readonly notBefore: number; readonly notAfter: number }
  | { readonly ok: false; readonly code: string; readonly message: string };

export type ToWorker = { readonly type: "ca"; readonly ca: WireCa } | { readonly type: "batch"; readonly id: number; readonly batch: WireBatch };
export type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "ca-error"; readonly code: string; readonly message: string }
  | { readonly type: "results"; readonly id: number; readonly results: readonly WireResult[] };

export function issuerFor(ca: WireCa): Issuer {
  return new Issuer(caFromPem(ca.certPem, ca.keyPem));
}

/** Parse + verify + issue for every job; a bad CSR fails its own job only. */
export function processBatch(issuer: Issuer, batch: WireBatch): WireResult[] {
  return batch.jobs.map((job): WireResult => {
    try {
      const profile = batch.profiles[job.profile];
      if (profile === undefined) throw new PlatformError("INTERNAL", `batch has no profile ${job.profile}`);
      const csr = parseCsr(job.csr);
      const cert = issuer.issue({ csr, profile, validity: { notBefore: new Date(job.notBefore), notAfter: new Date(job.notAfter) } });
      return { ok: true, der: cert.der, pem: cert.pem, serialHex: cert.serialHex, notBefore: job.notBefore, notAfter: job.notAfter };
    } catch (err) {
      return isPlatformError(err)
        ? { ok: false, code: err.code, message: err.message }
        : { ok: false, code: "INTERNAL", message: err instanceof Error ? err.message : String(err) };
    }
  });
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
    const results = issuer
      ? processBatch(issuer, msg.batch)
      : msg.batch.jobs.map((): WireResult => ({ ok: false, code: "SIGNER_NOT_READY", message: "no CA loaded in the signing worker" }));
    // Certificates travel back without a copy.
    const transfer = results.flatMap((r) => (r.ok ? [r.der.buffer as ArrayBuffer] : []));
    port.postMessage({ type: "results", id: msg.id, results } satisfies FromWorker, transfer);
  });
}

if (!isMainThread && parentPort && (workerData as { kind?: string } | null)?.kind === POOL_WORKER_KIND) serve(parentPort);
