// The cleaner: deletes CSRs that are done with (issued, denied or failed a while ago, expired) or pending for too long.
import { Buffer } from "node:buffer";
import { findCondition, isApproved, isDenied, isFailed, isIssued, isRevoked } from "../../api/conditions.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import type { ResourceClient } from "../../client/types.js";
import { invalidOption, isPlatformError } from "../../errors.js";
import { readCertificateFacts } from "../../pki/ca.js";
import { decodePem } from "../../pki/pem.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

export const CLEANER_CONTROLLER = "csrcleaner";

/** How long a CSR stays in each state before it is deleted, in milliseconds. */
export interface CleanerRules {
  /** Neither issued, denied nor failed (default 24 h from creation). */
  readonly pendingMs: number;
  /** Approved and issued (default 1 h from approval). */
  readonly approvedMs: number;
  /** Denied (default 1 h from the Denied condition). */
  readonly deniedMs: number;
  /** Failed (default 1 h from the Failed condition). */
  readonly failedMs: number;
  /** Issued and the certificate expired this long ago (default 0). */
  readonly issuedGraceMs: number;
}

export const DEFAULT_CLEANER_RULES: CleanerRules = Object.freeze({
  pendingMs: 24 * 3_600_000,
  approvedMs: 3_600_000,
  deniedMs: 3_600_000,
  failedMs: 3_600_000,
  issuedGraceMs: 0,
});

export type CleanupRule = "expired" | "denied" | "failed" | "approved" | "pending";

/** Which rule makes `csr` due for deletion at `nowMs`, if any. */
export function cleanupRule(csr: CertificateSigningRequest, nowMs: number, rules: CleanerRules = DEFAULT_CLEANER_RULES): CleanupRule | undefined {
  const past = (since: number | undefined, ms: number): boolean => since !== undefined && since + ms <= nowMs;
  if (isIssued(csr) && past(certificateNotAfter(csr), rules.issuedGraceMs)) return "expired";
  // The request is the record of its revocation (the API server's list and the CRL read it): kept until expiry.
  if (isRevoked(csr)) return undefined;
  if (isDenied(csr)) return past(conditionTime(csr, "Denied"), rules.deniedMs) ? "denied" : undefined;
  if (isFailed(csr)) return past(conditionTime(csr, "Failed"), rules.failedMs) ? "failed" : undefined;
  if (isIssued(csr)) return isApproved(csr) && past(conditionTime(csr, "Approved"), rules.approvedMs) ? "approved" : undefined;
  return past(parseTime(csr.metadata.creationTimestamp), rules.pendingMs) ? "pending" : undefined;
}

/** When a condition was last written; the creation time when it carries no time at all. */
function conditionTime(csr: CertificateSigningRequest, type: string): number | undefined {
  const c = findCondition(csr, type);
  return parseTime(c?.lastUpdateTime) ?? parseTime(c?.lastTransitionTime) ?? parseTime(csr.metadata.creationTimestamp);
}

function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

/** NotAfter of the issued (first) certificate; undefined when it cannot be read, so a broken one is never "expired". */
function certificateNotAfter(csr: CertificateSigningRequest): number | undefined {
  try {
    const pem = Buffer.from(csr.status!.certificate!, "base64").toString("latin1");
    const leaf = decodePem(pem, { label: "CERTIFICATE" })[0];
    return leaf ? readCertificateFacts(leaf.der).notAfter.getTime() : undefined;
  } catch {
    return undefined;
  }
}

export interface CleanerOptions extends ControllerOptions {
  readonly csrs: ResourceClient<CertificateSigningRequest>;
  readonly informer: Informer<CertificateSigningRequest>;
  readonly rules?: Partial<CleanerRules>;
  /** How often every CSR is looked at (default 1 h; the first pass runs once the cache synced). */
  readonly periodMs?: number;
}

export class CsrCleaner extends Controller {
  private readonly o: CleanerOptions;
  private readonly rules: CleanerRules;
  private readonly periodMs: number;

  constructor(options: CleanerOptions) {
    super(CLEANER_CONTROLLER, [options.informer], options);
    const rules = { ...DEFAULT_CLEANER_RULES, ...options.rules };
    for (const [name, ms] of Object.entries(rules)) {
      if (!(Number.isFinite(ms) && ms >= 0)) throw invalidOption(`rules.${name}`, "to be a number of milliseconds ≥ 0", ms);
    }
    const periodMs = options.periodMs ?? 3_600_000;
    if (!(periodMs > 0)) throw invalidOption("periodMs", "> 0", options.periodMs);
    this.o = options;
    this.rules = rules;
    this.periodMs = periodMs;
  }

  protected subscribe(): (() => void)[] {
    return [];
  }

  protected override onSynced(): void {
    this.repeat(this.periodMs, () => {
      for (const csr of this.o.informer.list()) if (cleanupRule(csr, this.clock.now(), this.rules)) this.queue.add(csr.metadata.name!);
    });
  }

  protected async sync(key: string, signal: AbortSignal): Promise<void> {
    const csr = this.o.informer.get(key);
    const rule = csr && cleanupRule(csr, this.clock.now(), this.rules);
    if (!csr || !rule) return;
    try {
      await this.o.csrs.delete(key, { preconditions: { uid: csr.metadata.uid! }, signal });
    } catch (err) {
      // Gone already, or replaced by a new request of the same name: nothing of ours to delete.
      if (isPlatformError(err, "NOT_FOUND") || isPlatformError(err, "CONFLICT")) return;
      throw err;
    }
    this.metrics?.csrCleaned.inc({ rule });
    this.log.info({ name: key, rule, signerName: csr.spec?.signerName }, "old request deleted");
  }
}
