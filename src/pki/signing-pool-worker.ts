// Worker side of SigningPool (and its in-process path): read, judge, verify and issue batches of jobs for the CAs and rules it was sent.
import { Buffer } from "node:buffer";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { isPlatformError, PlatformError } from "../errors.js";
import { parseCsr } from "./csr.js";
import { Issuer } from "./issue.js";
import { CHECKED, issuedNatively, issueNative, MAX_TEMPLATES, nativeBatchAvailable, nativePemText, nativeResult, NO_TEMPLATE, type NativeBatch, type NativeTemplate } from "./native-issue.js";
import { applyRule, loadRule, type RuleSlot } from "./pool-rules.js";
import { SERIAL_HEX, transferList, type FromWorker, type ToWorker, type WireBatch, type WireCa, type WireParsed, type WireResults } from "./signing-pool-wire.js";
import type { CaKeyPair, ParsedCsr, Validity } from "./types.js";
import { SharedVerifiedMemo } from "./verified-memo.js";

/** Marks threads started by SigningPool, so importing this module elsewhere starts nothing. */
export const POOL_WORKER_KIND = "platform-ca-signing-pool";

/** A worker's workerData: its kind, and the buffer of the process's memory of verified requests when it has one. */
export interface PoolWorkerData {
  readonly kind: typeof POOL_WORKER_KIND;
  readonly verifiedMemo?: SharedArrayBuffer;
}

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

/**
 * Rules + parse + verify + issue for every job; a bad or refused CSR fails its own job only. The jobs with rules are
 * read and judged first (their refusals are errors from then on); the DER CSRs go through one native call (native-issue.ts);
 * what it did not issue, and PEM or parsed CSRs, take the JavaScript path.
 */
export function processBatch(
  issuers: ReadonlyMap<number, IssuerSlot>,
  batch: WireBatch,
  rules: ReadonlyMap<number, RuleSlot> = new Map(),
  memo?: SharedVerifiedMemo,
): WireResults {
  const refused = judge(batch, rules);
  const native = nativeBatchAvailable() ? issueBatchNatively(issuers, batch, refused, memo) : undefined;
  const count = batch.csrEnds.length;
  if (native !== undefined && allIssued(native, count)) {
    // The usual burst: every certificate from the native call, handed on as it returned them.
    const derTotal = count === 0 ? 0 : native.derEnds[count - 1]!;
    const der = new Uint8Array(native.buffer, 0, derTotal);
    const pem = new Uint8Array(native.buffer, derTotal, count === 0 ? 0 : native.pemEnds[count - 1]!);
    const serials = Buffer.from(native.serials.buffer, native.serials.byteOffset, native.serials.length).toString("hex");
    return { der, derEnds: native.derEnds, pem, pemEnds: native.pemEnds, serials, errors: {} };
  }
  const pemText = native === undefined ? "" : nativePemText(native);
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
      const refusal = refused[i];
      if (refusal !== undefined) throw refusal;
      let cert: { readonly der: Uint8Array; readonly pem: string; readonly serialHex: string };
      if (native !== undefined && issuedNatively(native, i)) cert = nativeResult(native, i, pemText);
      else {
        const issuer = issuers.get(batch.caIds[i]!);
        if (issuer === undefined) throw new PlatformError("SIGNER_NOT_READY", "no CA loaded in the signing worker");
        if (issuer instanceof PlatformError) throw issuer;
        const profile = batch.profiles[batch.profileIndex[i]!];
        if (profile === undefined) throw new PlatformError("INTERNAL", `batch has no profile ${batch.profileIndex[i]}`);
        const parsed = batch.parsed[i];
        // A worker thread sees each request once: the verified-request memory could only cost there.
        const csr = parsed !== undefined ? fromWire(parsed) : parseCsr(batch.texts[i] ?? csrAt(batch, i), { remember: isMainThread });
        const from = batch.times[2 * i]!;
        const to = batch.times[2 * i + 1]!;
        // Jobs of one batch usually share their window: one validity object for a run of equal ones.
        if (validity === undefined || validity.notBefore.getTime() !== from || validity.notAfter.getTime() !== to) {
          validity = { notBefore: new Date(from), notAfter: new Date(to) };
        }
        const ext = batch.extensionIndex[i]!;
        cert = issuer.issue({ csr, profile, validity, ...(ext >= 0 && { signerExtensions: batch.extensionSets[ext]! }) });
      }
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
  // Copied out of Buffer.from's result: a small one is a view of Node's shared pool, which must never be transferred.
  return { der, derEnds, pem: new Uint8Array(Buffer.from(pems.join(""), "latin1")), pemEnds, serials: serials.join(""), errors };
}

/** The jobs with rules that the rules (or the reading they need) refuse, by index, with the error each is failed with. */
function judge(batch: WireBatch, rules: ReadonlyMap<number, RuleSlot>): Record<number, unknown> {
  const refused: Record<number, unknown> = {};
  for (let i = 0; i < batch.ruleIds.length; i++) {
    const id = batch.ruleIds[i]!;
    if (id === 0) continue;
    try {
      applyRule(rules.get(id), csrAt(batch, i), batch.requests[i]!);
    } catch (err) {
      refused[i] = err;
    }
  }
  return refused;
}

function csrAt(batch: WireBatch, i: number): Uint8Array {
  return batch.csrBytes.subarray(i === 0 ? 0 : batch.csrEnds[i - 1]!, batch.csrEnds[i]!);
}

function allIssued(native: NativeBatch, count: number): boolean {
  for (let i = 0; i < count; i++) if (!issuedNatively(native, i)) return false;
  return true;
}

/**
 * The DER jobs of a batch in one native call: each run of jobs with the same CA, profile, signer extensions and window
 * shares a template; a request `memo` holds (this process verified it before) is issued without a second check.
 * Undefined when no job can go that way.
 */
function issueBatchNatively(issuers: ReadonlyMap<number, IssuerSlot>, batch: WireBatch, refused: Readonly<Record<number, unknown>>, memo: SharedVerifiedMemo | undefined): NativeBatch | undefined {
  const count = batch.csrEnds.length;
  const index = new Uint16Array(count).fill(NO_TEMPLATE);
  const templates: NativeTemplate[] = [];
  let runKey = -1;
  let runIndex = NO_TEMPLATE;
  // The bytes hashed are the ones issued: a batch's buffer was transferred here, no other thread writes it.
  const checked = (i: number) => (memo !== undefined && memo.has(SharedVerifiedMemo.digest(csrAt(batch, i))) ? CHECKED : 0);
  for (let i = 0; i < count; i++) {
    if (batch.texts[i] !== undefined || batch.parsed[i] !== undefined || i in refused) continue;
    const ca = batch.caIds[i]!;
    const profileIndex = batch.profileIndex[i]!;
    const ext = batch.extensionIndex[i]!;
    const from = batch.times[2 * i]!;
    const to = batch.times[2 * i + 1]!;
    if (runKey === i - 1 && ca === batch.caIds[i - 1] && profileIndex === batch.profileIndex[i - 1] && ext === batch.extensionIndex[i - 1] && from === batch.times[2 * i - 2] && to === batch.times[2 * i - 1]) {
      if (runIndex !== NO_TEMPLATE) index[i] = runIndex | checked(i);
      runKey = i;
      continue;
    }
    runKey = i;
    runIndex = NO_TEMPLATE;
    const issuer = issuers.get(ca);
    const profile = batch.profiles[profileIndex];
    if (!(issuer instanceof Issuer) || profile === undefined || templates.length === MAX_TEMPLATES) continue;
    let template: NativeTemplate | undefined;
    try {
      template = issuer.nativeTemplate(profile, { notBefore: new Date(from), notAfter: new Date(to) }, ext >= 0 ? batch.extensionSets[ext] : undefined);
    } catch {
      continue; // the JavaScript path fails these jobs with the error
    }
    if (template === undefined) continue;
    runIndex = templates.indexOf(template);
    if (runIndex < 0) runIndex = templates.push(template) - 1;
    index[i] = runIndex | checked(i);
  }
  return templates.length === 0 ? undefined : issueNative(templates, index, batch.csrBytes, batch.csrEnds);
}

function serve(port: NonNullable<typeof parentPort>): void {
  const issuers = new Map<number, IssuerSlot>();
  const rules = new Map<number, RuleSlot>();
  const shared = (workerData as PoolWorkerData).verifiedMemo;
  const memo = shared && new SharedVerifiedMemo(shared);
  const answer = (id: number, batch: WireBatch): void => {
    const results = processBatch(issuers, batch, rules, memo);
    // Certificates travel back without a copy.
    port.postMessage({ type: "results", id, results } satisfies FromWorker, transferList(results.der, results.derEnds, results.pem, results.pemEnds));
  };
  /** Batches waiting for rules to load: a `forget` sent after them waits for them, as they may name its id. */
  const waiting = new Set<Promise<void>>();
  port.on("message", (msg: ToWorker) => {
    if (msg.type === "ca") return void issuers.set(msg.id, issuerFor(msg.ca));
    if (msg.type === "rules") return void loadRule(rules, msg.id, msg.rules);
    if (msg.type === "forget") {
      const forget = () => void (issuers.delete(msg.id), rules.delete(msg.id));
      return waiting.size === 0 ? forget() : void Promise.all(waiting).then(forget);
    }
    // Rules are loaded (an import) once per signer; a batch that needs one still loading waits for it.
    const loading = [...new Set(msg.batch.ruleIds)].map((id) => rules.get(id)).filter((r) => r instanceof Promise);
    if (loading.length === 0) return answer(msg.id, msg.batch);
    const answered = Promise.all(loading).then(() => {
      waiting.delete(answered);
      answer(msg.id, msg.batch);
    });
    waiting.add(answered);
  });
}

if (!isMainThread && parentPort && (workerData as { kind?: string } | null)?.kind === POOL_WORKER_KIND) serve(parentPort);
