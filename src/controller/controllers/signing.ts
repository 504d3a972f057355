// The signing controller: issues approved CSRs with the signer their spec.signerName names and writes status.certificate.
import { Buffer } from "node:buffer";
import { CsrConditionReason, isApproved, isDenied, isFailed, isIssued } from "../../api/conditions.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import type { ResourceClient } from "../../client/types.js";
import { toPlatformError } from "../../errors.js";
import { validateIssuedCertificate } from "../../pki/bundle.js";
import type { SignerRegistry } from "../../../signers/registry.js";
import type { SigningRequest } from "../../../signers/signer.js";
import type { SigningPool } from "../../pki/signing-pool.js";
import type { EventRecorder } from "../event-recorder.js";
import type { Informer } from "../informer.js";
import { conditionTime, CsrParser, READ_PROBLEM_CODES, REQUEST_PROBLEM_CODES, setCondition, writeCsr } from "./csr-object.js";
import { Controller, type ControllerOptions } from "../controller.js";

export const SIGNING_CONTROLLER = "csrsigning";

export interface SigningControllerOptions extends ControllerOptions {
  readonly csrs: ResourceClient<CertificateSigningRequest>;
  readonly informer: Informer<CertificateSigningRequest>;
  readonly signers: SignerRegistry;
  readonly events: EventRecorder;
  /** Shared with the approver so each request is parsed once. */
  readonly parser?: CsrParser;
  /**
   * Signs on worker threads while keys wait in the queue (a burst); a lone request is still signed on this thread.
   * Without it every signature is made on this thread.
   */
  readonly pool?: SigningPool;
}

/** Events this controller records. */
export const SigningEvent = {
  Issued: "CertificateIssued",
  ValidationFailed: CsrConditionReason.SignerValidationFailure,
  SigningFailed: CsrConditionReason.SigningFailed,
} as const;

/** How many uids of just-issued CSRs are remembered while the cache catches up with the write. */
const RECENT_LIMIT = 16_384;

export class SigningController extends Controller {
  private readonly o: SigningControllerOptions;
  private readonly parser: CsrParser;
  /** uids this replica issued whose cached copy may still lack the certificate: a second signature would be waste. */
  private readonly recent = new Set<string>();
  /**
   * Writes that failed without an answer (connection lost, server restarted): the server may have committed them.
   * When the certificate shows up in the cache byte for byte, it is this replica's, and is counted then.
   */
  private readonly unanswered = new Map<string, { readonly certificate: string; readonly record: (written: CertificateSigningRequest) => void }>();

  constructor(options: SigningControllerOptions) {
    super(SIGNING_CONTROLLER, [options.informer], options);
    this.o = options;
    this.parser = options.parser ?? new CsrParser();
  }

  protected subscribe(): (() => void)[] {
    return [
      this.o.informer.addHandlers({
        onAdd: (csr) => this.enqueue(csr),
        onUpdate: (_old, csr) => this.enqueue(csr),
        onDelete: (csr) => void this.recent.delete(csr.metadata.uid ?? ""),
      }),
    ];
  }

  private enqueue(csr: CertificateSigningRequest): void {
    if (isIssued(csr)) {
      const uid = csr.metadata.uid ?? "";
      this.recent.delete(uid);
      const pending = this.unanswered.get(uid);
      this.unanswered.delete(uid);
      if (pending && pending.certificate === csr.status?.certificate) pending.record(csr);
      return;
    }
    if (this.wanted(csr)) this.queue.add(csr.metadata.name!);
  }

  /** Approved, not denied or failed, no certificate yet, and a signer of ours. */
  private wanted(csr: CertificateSigningRequest): boolean {
    return isApproved(csr) && !isDenied(csr) && !isFailed(csr) && !isIssued(csr) && this.o.signers.has(csr.spec?.signerName ?? "");
  }

  protected async sync(key: string, signal: AbortSignal): Promise<void> {
    const csr = this.o.informer.get(key);
    if (!csr || !this.wanted(csr) || this.recent.has(csr.metadata.uid ?? "")) return;
    const signerName = csr.spec.signerName;
    const signer = this.o.signers.get(signerName);
    const unreadable = (err: unknown) => this.fail(csr, CsrConditionReason.SignerValidationFailure, `the request cannot be read: ${toPlatformError(err).message}`, signal);
    let request: SigningRequest;
    // With a pool, a signer that checks the request's signature as it issues gets it unchecked (when no one here
    // checked it yet): the checks of a burst then run on the pool's threads beside the signatures. Without one the
    // check would run here anyway, after a second read.
    let checked = true;
    try {
      if (signer.signUnchecked && this.o.pool) ({ request, checked } = this.parser.uncheckedRequest(csr));
      else request = this.parser.request(csr);
    } catch (err) {
      return unreadable(err);
    }
    const verdict = signer.validate(request);
    if (!verdict.ok) {
      // A request with bad bytes is reported as unreadable first, as a checked read would have.
      if (!checked) {
        try {
          this.parser.request(csr);
        } catch (err) {
          return unreadable(err);
        }
      }
      return this.fail(csr, CsrConditionReason.SignerValidationFailure, verdict.reason, signal);
    }
    const started = process.hrtime.bigint();
    let pem: string;
    try {
      // The queue's length is the burst behind this request: the pool spreads it over the cores.
      const pool = this.o.pool;
      const options = pool && { pool, backlog: this.backlog() };
      const now = new Date(this.clock.now());
      pem = await this.tracer.inSpan("sign", { signerName }, () => (checked ? signer.sign(request, now, options) : signer.signUnchecked!(request, now, options)));
    } catch (err) {
      const e = toPlatformError(err);
      if (!checked && READ_PROBLEM_CODES.has(e.code)) return unreadable(e);
      if (!REQUEST_PROBLEM_CODES.has(e.code)) throw e; // CA expired, signer not ready...: retried with backoff
      const reason = e.code === "SIGNER_REJECTED" ? CsrConditionReason.SignerValidationFailure : CsrConditionReason.SigningFailed;
      return this.fail(csr, reason, e.message, signal);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    let notBefore: Date;
    let notAfter: Date;
    try {
      ({ notBefore, notAfter } = validateIssuedCertificate(pem).facts[0]!);
    } catch (err) {
      return this.fail(csr, CsrConditionReason.SigningFailed, `signer ${signerName} returned an unusable certificate: ${toPlatformError(err).message}`, signal);
    }
    const certificate = Buffer.from(pem, "latin1").toString("base64");
    const record = (written: CertificateSigningRequest): void => {
      const m = this.metrics;
      m?.csrSigned.inc({ signer: signerName });
      m?.signingDuration.observe({ signer: signerName }, seconds);
      if (request.expirationSeconds !== undefined) m?.requestedDuration.observe({ signer: signerName }, request.expirationSeconds);
      m?.honouredDuration.observe({ signer: signerName }, (notAfter.getTime() - notBefore.getTime()) / 1000);
      this.o.events.event(written, "Normal", SigningEvent.Issued, "Sign", `certificate issued by ${signerName}, valid until ${notAfter.toISOString()}`);
      this.log.debug({ name: key, signerName, notAfter: notAfter.toISOString() }, "certificate issued");
    };
    let written: CertificateSigningRequest | undefined;
    try {
      written = await writeCsr(csr, {
        client: this.o.csrs,
        subresource: "status",
        change: (copy) => void ((copy.status ??= {}).certificate = certificate),
        settled: (fresh) => !this.wanted(fresh),
        landed: (fresh) => fresh.status?.certificate === certificate,
        signal,
      });
    } catch (err) {
      const uid = csr.metadata.uid ?? "";
      if (this.unanswered.size >= RECENT_LIMIT) this.unanswered.delete(this.unanswered.keys().next().value!);
      this.unanswered.set(uid, { certificate, record });
      throw err;
    }
    if (!written) return;
    this.remember(csr.metadata.uid);
    record(written);
  }

  /** A terminal problem: the Failed condition through /status and a Warning event; the sync itself succeeds. */
  private async fail(csr: CertificateSigningRequest, reason: CsrConditionReason, message: string, signal: AbortSignal): Promise<void> {
    const now = conditionTime(this.clock.now());
    const written = await writeCsr(csr, {
      client: this.o.csrs,
      subresource: "status",
      change: (copy) => setCondition(copy, { type: "Failed", status: "True", reason, message, lastUpdateTime: now, lastTransitionTime: now }),
      settled: (fresh) => !this.wanted(fresh),
      signal,
    });
    if (!written) return;
    this.metrics?.csrFailed.inc({ signer: csr.spec.signerName, reason });
    this.o.events.event(written, "Warning", reason, "Sign", message);
    this.log.info({ name: csr.metadata.name, signerName: csr.spec.signerName, reason, message }, "request marked Failed");
  }

  private remember(uid: string | undefined): void {
    if (uid === undefined) return;
    this.recent.add(uid);
    if (this.recent.size > RECENT_LIMIT) this.recent.delete(this.recent.values().next().value!);
  }
}
