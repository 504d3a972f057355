// A signer's rules as the signing pool runs them beside the signature check: portable data a worker rebuilds them from.
import { isPlatformError, PlatformError } from "../errors.js";
import { parseCsr } from "./csr.js";
import type { ParsedCsr } from "./types.js";

/** The fields of a CSR object's spec a signer's rules read besides the request itself (SigningRequest less its CSR). */
export interface RequestFields {
  readonly signerName: string;
  /** spec.usages (seed strings, e.g. "digital signature"). */
  readonly usages: readonly string[];
  /** spec.expirationSeconds when set. */
  readonly expirationSeconds?: number;
  /** spec.username / uid / groups / extra of the requesting user (set by the API server). */
  readonly username?: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** A rule over a read request: the reason it is refused (words a person can act on), or undefined. Pure: no I/O, no clock. */
export type RequestRule = (request: RequestFields & { readonly csr: ParsedCsr }) => string | undefined;

/**
 * Rules a worker thread can rebuild, since functions do not cross threads: `module` (a file URL) exports `export`, a
 * function that returns the rule for `data` (structured-cloneable). It must build the very rule the signer runs.
 */
export interface PortableRules {
  readonly module: string;
  readonly export: string;
  readonly data: unknown;
}

/** The rules of a pool job: the rule itself for the calling thread, and its portable form for the workers. */
export interface JobRules {
  readonly rule: RequestRule;
  readonly portable: PortableRules;
}

/** A rule in a worker: loaded, being loaded, or the error loading it gave (which then fails its jobs only). */
export type RuleSlot = RequestRule | Promise<void> | PlatformError;

/** Loads `portable` into `slots[id]`; the returned promise settles once the slot holds the rule or its error. */
export function loadRule(slots: Map<number, RuleSlot>, id: number, portable: PortableRules): Promise<void> {
  const loading = import(portable.module)
    .then((m: Record<string, unknown>) => {
      const build = m[portable.export];
      if (typeof build !== "function") throw new Error(`${portable.module} does not export a function ${portable.export}`);
      const rule = (build as (data: unknown) => unknown)(portable.data);
      if (typeof rule !== "function") throw new Error(`${portable.export} of ${portable.module} did not return a rule`);
      return rule as RequestRule;
    })
    .then(
      (rule) => void (slots.get(id) === loading && slots.set(id, rule)),
      (err: unknown) => void (slots.get(id) === loading && slots.set(id, new PlatformError("SIGNER_NOT_READY", `signing worker cannot load the signer's rules: ${err instanceof Error ? err.message : String(err)}`))),
    );
  slots.set(id, loading);
  return loading;
}

/**
 * Reads `csr` (DER) without its signature check and applies `rule`: undefined when accepted (the issuance then checks
 * the signature). A refused request is checked first, so one with a bad signature reports that, as a checked read
 * would have; either way the error is thrown: the reading's, or SIGNER_REJECTED with the rule's reason.
 */
export function applyRule(rule: RuleSlot | undefined, csr: Uint8Array, fields: RequestFields): void {
  if (rule === undefined || rule instanceof Promise) throw new PlatformError("SIGNER_NOT_READY", "the signer's rules are not loaded in the signing worker");
  if (isPlatformError(rule)) throw rule;
  // The request is one a worker sees once: the verified-request memory could only cost here.
  const parsed = parseCsr(csr, { verify: false, remember: false });
  const reason = rule({ ...fields, csr: parsed });
  if (reason === undefined) return;
  parseCsr(csr, { remember: false });
  throw new PlatformError("SIGNER_REJECTED", reason, { details: { signerName: fields.signerName } });
}
