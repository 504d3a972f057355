// The signing controller: issues approved CSRs with the signer their spec.signerName names and writes status.certificate.
import { Buffer } from "node:buffer";
import { CsrConditionReason, isApproved, isDenied, isFailed, isIssued } from "../../api/conditions.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError, type PlatformError, toPlatformError } from "../../errors.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { validateIssuedCertificate } from "../../pki/bundle.js";
import type { SignerRegistry } from "../../../signers/registry.js";
import type { IssuedChain, RequestBytes, Signer, SigningRequest } from "../../../signers/signer.js";
import type { SigningPool } from "../../pki/signing-pool.js";
import type { EventRecorder } from "../event-recorder.js";
import type { Informer } from "../informer.js";
import { CsrParser, READ_PROBLEM_CODES, REQUEST_PROBLEM_CODES, setCondition, writeCsr } from "./csr-object.js";
import { BoundedSet } from "../bounded-set.js";
import { UnansweredWrites } from "./unanswered.js";
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

/** Requests one sync hands the signer at once in a burst (its own and waiting ones): the pool's batch size. */
const BATCH_LIMIT = 64;

/** A request handed to the signer as bytes, with the key and object it came from. */
interface BatchItem {
  readonly key: string;
  readonly csr: CertificateSigningRequest;
  readonly bytes: RequestBytes;
}

/** How many uids of just-issued CSRs are remembered while the cache catches up with the write. */
const RECENT_LIMIT = 16_384;

export class SigningController extends Controller {
  private readonly o: SigningControllerOptions;
  private readonly parser: CsrParser;
  /** uids this replica issued whose cached copy may still lack the certificate: a second signature would be waste. */
  private readonly recent = new BoundedSet<string>(RECENT_LIMIT);
  /** Writes without an answer: counted when the certificate shows up in the cache byte for byte (it is this replica's). */
  private readonly unanswered = new UnansweredWrites(RECENT_LIMIT);

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
      this.unanswered.settle(csr);
      return;
    }
    if (this.wanted(csr)) this.queue.add(csr.metadata.name!);
  }

  /** Approved, not denied or failed, no certificate yet, and a signer of ours. */
  private wanted(csr: CertificateSigningRequest): boolean {
    return isApproved(csr) && !isDenied(csr) && !isFailed(csr) && !isIssued(csr) && this.o.signers.has(csr.spec?.signerName ?? "");
  }

  protected async sync(key: string, signal: AbortSignal): Promise<void> {
    const csr = this.pending(key);
    if (csr === undefined) return;
    const signer = this.o.signers.get(csr.spec.signerName);
    if (!this.o.pool || !signer.signBytes) return this.signOne(csr, signer, signal);
    let bytes: RequestBytes;
    try {
      bytes = this.parser.bytes(csr);
    } catch (err) {
      return this.unreadable(csr, err, signal);
    }
    return this.signBatch(signer, { key, csr, bytes }, signal);
  }

  /** The object of `key` when it still wants a certificate from this replica. */
  private pending(key: string): CertificateSigningRequest | undefined {
    const csr = this.o.informer.get(key);
    return csr && this.wanted(csr) && !this.recent.has(csr.metadata.uid ?? "") ? csr : undefined;
  }

  /**
   * Requests handed to the signer as bytes (Signer.signBytes): read, judged, checked and signed on the pool's threads in
   * a burst. Requests for the same signer waiting in the queue join `first`, so the pool gets larger batches than the
   * concurrent syncs alone would give it; each is still written, failed or retried on its own.
   */
  private async signBatch(signer: Signer, first: BatchItem, signal: AbortSignal): Promise<void> {
    const items = [first];
    const others: Promise<void>[] = [];
    // The requests for this signer at the head of the queue (and keys with nothing left to do): a request for another
    // signer keeps its place for the other syncs.
    const mine = (key: string) => {
      const csr = this.pending(key);
      return csr === undefined || csr.spec.signerName === signer.signerName;
    };
    for (const key of this.takeWaiting(Math.min(BATCH_LIMIT - 1, this.backlog()), mine)) {
      const csr = this.pending(key);
      if (csr === undefined) {
        this.finish(key, undefined);
        continue;
      }
      let bytes: RequestBytes;
      try {
        bytes = this.parser.bytes(csr);
      } catch (err) {
        others.push(this.settle(key, () => this.unreadable(csr, err, signal)));
        continue;
      }
      items.push({ key, csr, bytes });
    }
    const signerName = signer.signerName;
    const started = process.hrtime.bigint();
    const now = new Date(this.clock.now());
    // The queue's length is the burst behind these requests: the pool spreads it over the cores.
    const options = { pool: this.o.pool!, backlog: this.backlog() };
    let results: readonly (IssuedChain | PlatformError)[];
    try {
      results = await this.tracer.inSpan("sign", { signerName, requests: items.length }, () => signer.signBytes!(items.map((i) => i.bytes), now, options));
    } catch (err) {
      // Not a request's own outcome (those are results): every key of the batch is retried.
      for (const item of items.slice(1)) this.finish(item.key, { err });
      await Promise.all(others);
      throw err;
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const conclude = (item: BatchItem, i: number) => () => {
      const result = results[i]!;
      if (isPlatformError(result)) return this.refused(item.csr, result, false, signal);
      return this.write(item.csr, result, seconds, item.bytes.request.expirationSeconds, signal);
    };
    const own = conclude(first, 0)().then(() => undefined, (err: unknown) => ({ err }));
    await Promise.all([...items.slice(1).map((item, i) => this.settle(item.key, conclude(item, i + 1))), ...others]);
    const failed = await own;
    if (failed !== undefined) throw failed.err;
  }

  /** Runs the work of a key this sync took from the queue (takeWaiting), then finishes the key with its outcome. */
  private settle(key: string, run: () => Promise<void>): Promise<void> {
    return run().then(
      () => this.finish(key, undefined),
      (err: unknown) => this.finish(key, { err }),
    );
  }

  /** One request read here with its check, validated and signed. */
  private async signOne(csr: CertificateSigningRequest, signer: Signer, signal: AbortSignal): Promise<void> {
    const signerName = csr.spec.signerName;
    let request: SigningRequest;
    try {
      request = this.parser.request(csr);
    } catch (err) {
      return this.unreadable(csr, err, signal);
    }
    const verdict = signer.validate(request);
    if (!verdict.ok) return this.fail(csr, CsrConditionReason.SignerValidationFailure, verdict.reason, signal);
    const started = process.hrtime.bigint();
    let pem: string;
    try {
      // The queue's length is the burst behind this request: the pool spreads it over the cores.
      const pool = this.o.pool;
      const options = pool && { pool, backlog: this.backlog() };
      const now = new Date(this.clock.now());
      pem = await this.tracer.inSpan("sign", { signerName }, () => signer.sign(request, now, options));
    } catch (err) {
      return this.refused(csr, toPlatformError(err), true, signal);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    let facts: { readonly notBefore: Date; readonly notAfter: Date };
    try {
      // A signer's PEM is read before it is written: a plug-in may return anything.
      facts = validateIssuedCertificate(pem).facts[0]!;
    } catch (err) {
      return this.fail(csr, CsrConditionReason.SigningFailed, `signer ${signerName} returned an unusable certificate: ${toPlatformError(err).message}`, signal);
    }
    return this.write(csr, { pem, ...facts }, seconds, request.expirationSeconds, signal);
  }

  private unreadable(csr: CertificateSigningRequest, err: unknown, signal: AbortSignal): Promise<void> {
    return this.fail(csr, CsrConditionReason.SignerValidationFailure, `the request cannot be read: ${toPlatformError(err).message}`, signal);
  }

  /** A signer's error: the request marked Failed when it can never be issued, else thrown to be retried with backoff. */
  private async refused(csr: CertificateSigningRequest, e: PlatformError, checked: boolean, signal: AbortSignal): Promise<void> {
    if (!checked && READ_PROBLEM_CODES.has(e.code)) return this.unreadable(csr, e, signal);
    if (!REQUEST_PROBLEM_CODES.has(e.code)) throw e; // CA expired, signer not ready...: retried with backoff
    const reason = e.code === "SIGNER_REJECTED" ? CsrConditionReason.SignerValidationFailure : CsrConditionReason.SigningFailed;
    return this.fail(csr, reason, e.message, signal);
  }

  /** Writes the issued chain to status.certificate; counted and announced once the write is known to have landed. */
  private async write(csr: CertificateSigningRequest, issued: IssuedChain, seconds: number, expirationSeconds: number | undefined, signal: AbortSignal): Promise<void> {
    const signerName = csr.spec.signerName;
    const { notBefore, notAfter } = issued;
    const certificate = Buffer.from(issued.pem, "latin1").toString("base64");
    const record = (written: CertificateSigningRequest): void => {
      const m = this.metrics;
      const labels = { signer: signerName };
      m?.csrSigned.inc(signerName, labels);
      m?.signingDuration.observe(signerName, labels, seconds);
      if (expirationSeconds !== undefined) m?.requestedDuration.observe(signerName, labels, expirationSeconds);
      m?.honouredDuration.observe(signerName, labels, (notAfter.getTime() - notBefore.getTime()) / 1000);
      this.o.events.event(written, "Normal", SigningEvent.Issued, "Sign", `certificate issued by ${signerName}, valid until ${notAfter.toISOString()}`);
      // Built only when asked for: one per certificate in a burst.
      if (this.log.isLevelEnabled("debug")) this.log.debug({ name: csr.metadata.name, signerName, notAfter: notAfter.toISOString() }, "certificate issued");
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
      this.unanswered.add(csr.metadata.uid ?? "", (fresh) => fresh.status?.certificate === certificate, record);
      throw err;
    }
    if (!written) return;
    this.remember(csr.metadata.uid);
    record(written);
  }

  /** A terminal problem: the Failed condition through /status and a Warning event; the sync itself succeeds. */
  private async fail(csr: CertificateSigningRequest, reason: CsrConditionReason, message: string, signal: AbortSignal): Promise<void> {
    const now = rfc3339(new Date(this.clock.now()));
    const written = await writeCsr(csr, {
      client: this.o.csrs,
      subresource: "status",
      change: (copy) => setCondition(copy, { type: "Failed", status: "True", reason, message, lastUpdateTime: now, lastTransitionTime: now }),
      settled: (fresh) => !this.wanted(fresh),
      signal,
    });
    if (!written) return;
    this.metrics?.csrFailed.inc(`${csr.spec.signerName}\u0000${reason}`, { signer: csr.spec.signerName, reason });
    this.o.events.event(written, "Warning", reason, "Sign", message);
    this.log.info({ name: csr.metadata.name, signerName: csr.spec.signerName, reason, message }, "request marked Failed");
  }

  private remember(uid: string | undefined): void {
    if (uid === undefined) return;
    this.recent.add(uid);
  }
}
