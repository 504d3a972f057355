// Batched native issuance (native/issue.c): the per-CA template it patches, and one call for a batch of DER CSRs.
//
// The C side reads each CSR at least as strictly as parseCsr, checks its signature, and assembles the TBSCertificate
// exactly as Issuer.tbsFor does from the pieces packed here; a job it does not issue comes back empty and goes the
// JavaScript way (parseCsr + Issuer.issue), which refuses it with its precise error or issues it.
import { Buffer } from "node:buffer";
import { objectIdentifier } from "./der-writer.js";
import { nativeCrypto, type NativeSigningKey } from "./native.js";
import { hex } from "./bytes.js";
import { randomSerial, randomSerials } from "./tbs-template.js";

/** templateIndex of a job the native call leaves alone. */
export const NO_TEMPLATE = 0xffff;
/**
 * templateIndex flag: this process verified the request's self-signature before (its verified-request memory holds
 * these very bytes: the API server's create check in `up`, the approver's reading), so it is not checked again.
 */
export const CHECKED = 0x8000;
/** Templates one call takes (native/issue.c MAX_TEMPLATES). */
export const MAX_TEMPLATES = 64;
const SERIAL_BYTES = 16;
const HEADER_FIELDS = 7;
const INCLUDE_SANS = 1;

/** A CA key held natively and the template of one (profile, validity, signer extensions) for it. */
export interface NativeTemplate {
  readonly key: NativeSigningKey;
  readonly bytes: Uint8Array;
}

export interface TemplateParts {
  readonly hashBits: number;
  readonly includeSans: boolean;
  /** The CA's signature AlgorithmIdentifier. */
  readonly algorithmDer: Uint8Array;
  /** What follows the serial up to the subject: algorithm, issuer Name, Validity. */
  readonly middle: readonly Uint8Array[];
  /** Extensions before the SubjectKeyIdentifier (the profile's), and after it (AKI, the signer's). */
  readonly head: readonly Uint8Array[];
  readonly tail: readonly Uint8Array[];
  /** Requested extensions (dotted OIDs) copied into the certificate, beside the SAN. */
  readonly copy: readonly string[];
}

const total = (parts: readonly Uint8Array[]): number => parts.reduce((n, p) => n + p.length, 0);

/** The template native/issue.c reads: seven u32 (hash, flags and the lengths) and the bytes; undefined when it cannot say it. */
export function packTemplate(parts: TemplateParts): Uint8Array | undefined {
  const allow: Uint8Array[] = [];
  for (const oid of parts.copy) {
    let der: Uint8Array;
    try {
      der = objectIdentifier(oid);
    } catch {
      continue; // not an OID: it matches no requested extension
    }
    // The C list holds short-form OID TLVs only; a longer OID keeps the profile on the JavaScript path.
    if (der.length > 0x81) return undefined;
    allow.push(der);
  }
  const middle = [parts.algorithmDer, ...parts.middle];
  const sections = [middle, parts.head, parts.tail, allow];
  const out = new Uint8Array(4 * HEADER_FIELDS + sections.reduce((n, s) => n + total(s), 0));
  const view = new DataView(out.buffer);
  const fields = [parts.hashBits, parts.includeSans ? INCLUDE_SANS : 0, parts.algorithmDer.length, ...sections.map(total)];
  fields.forEach((v, i) => view.setUint32(4 * i, v, true));
  let at = 4 * HEADER_FIELDS;
  for (const section of sections) {
    for (const p of section) {
      out.set(p, at);
      at += p.length;
    }
  }
  return out;
}

/** What one native call issued: DER and PEM back to back, where each job ends, and the serials it was given. */
export interface NativeBatch {
  readonly buffer: ArrayBuffer;
  readonly derEnds: Uint32Array;
  readonly pemEnds: Uint32Array;
  readonly serials: Uint8Array;
}

/** Whether the native call issued job i (an empty job was left to JavaScript). */
export function issuedNatively(batch: NativeBatch, i: number): boolean {
  return batch.derEnds[i]! > (i === 0 ? 0 : batch.derEnds[i - 1]!);
}

/** Whether the accelerator can issue batches (built with issueBatch, not switched off). */
export function nativeBatchAvailable(): boolean {
  return nativeCrypto?.issueBatch !== undefined;
}

/**
 * Issues the jobs with a template in one native call; csrEnds[i] is where job i's DER ends in csrBytes. Undefined when
 * the accelerator cannot (then every job goes the JavaScript way).
 */
export function issueNative(
  templates: readonly NativeTemplate[],
  templateIndex: Uint16Array,
  csrBytes: Uint8Array,
  csrEnds: Uint32Array,
): NativeBatch | undefined {
  const issue = nativeCrypto?.issueBatch;
  if (issue === undefined || templates.length === 0 || templates.length > MAX_TEMPLATES) return undefined;
  const count = templateIndex.length;
  const serials = randomSerials(count);
  const derEnds = new Uint32Array(count);
  const pemEnds = new Uint32Array(count);
  const keys = templates.map((t) => t.key);
  const bytes = templates.map((t) => t.bytes);
  const buffer = issue.call(nativeCrypto, keys, bytes, templateIndex, csrBytes, csrEnds, serials, derEnds, pemEnds);
  return buffer === null ? undefined : { buffer, derEnds, pemEnds, serials };
}

// The arrays of a one-request call, reused: the call is synchronous, and a lone request should not pay for a batch's.
const ONE_INDEX = Uint16Array.of(0);
const ONE_CHECKED = Uint16Array.of(CHECKED);
const oneCsrEnd = new Uint32Array(1);
const oneDerEnd = new Uint32Array(1);
const onePemEnd = new Uint32Array(1);

/**
 * One DER request issued in one native call; undefined when it was not (the JavaScript path then decides). `checked`:
 * this process verified its self-signature before (CHECKED).
 */
export function issueOneNative(template: NativeTemplate, der: Uint8Array, checked = false): { der: Uint8Array; pem: string; serialHex: string } | undefined {
  const issue = nativeCrypto?.issueBatch;
  if (issue === undefined) return undefined;
  const serial = randomSerial();
  oneCsrEnd[0] = der.length;
  const buffer = issue.call(nativeCrypto, [template.key], [template.bytes], checked ? ONE_CHECKED : ONE_INDEX, der, oneCsrEnd, serial, oneDerEnd, onePemEnd);
  const derLength = oneDerEnd[0]!;
  if (buffer === null || derLength === 0) return undefined;
  return {
    der: new Uint8Array(buffer, 0, derLength),
    pem: Buffer.from(buffer).toString("latin1", derLength, derLength + onePemEnd[0]!),
    serialHex: hex(serial),
  };
}

/** Job i's certificate from a native batch (which must have issued it). */
export function nativeResult(batch: NativeBatch, i: number, pemText: string): { der: Uint8Array; pem: string; serialHex: string } {
  const derStart = i === 0 ? 0 : batch.derEnds[i - 1]!;
  const pemStart = i === 0 ? 0 : batch.pemEnds[i - 1]!;
  const serial = batch.serials.subarray(i * SERIAL_BYTES, (i + 1) * SERIAL_BYTES);
  return {
    der: new Uint8Array(batch.buffer, derStart, batch.derEnds[i]! - derStart),
    pem: pemText.slice(pemStart, batch.pemEnds[i]!),
    serialHex: Buffer.from(serial.buffer, serial.byteOffset, serial.length).toString("hex"),
  };
}

/** All the PEM texts of a native batch as one string. */
export function nativePemText(batch: NativeBatch): string {
  const count = batch.derEnds.length;
  const derTotal = count === 0 ? 0 : batch.derEnds[count - 1]!;
  const pemTotal = count === 0 ? 0 : batch.pemEnds[count - 1]!;
  return Buffer.from(batch.buffer, derTotal, pemTotal).toString("latin1");
}
