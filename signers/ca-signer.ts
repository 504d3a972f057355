// Shared machinery of signers that issue from a CA: request basics, lifetime, issuance, chain and trust anchors.
import { invalidOption, PlatformError, toPlatformError } from "../src/errors.js";
import type { Logger } from "../src/logger.js";
import { crlIssuerFromCa, type CrlIssuer } from "../src/pki/crl.js";
import { parseCsr } from "../src/pki/csr.js";
import { issueCertificate, issueCertificateAsync, type IssuedCertificate } from "../src/pki/issue.js";
import { crlDistributionPointsExtension } from "../src/pki/tbs-template.js";
import type { CaKeyPair, Validity } from "../src/pki/types.js";
import { computeValidity, MIN_EXPIRATION_SECONDS } from "../src/pki/validity.js";
import { DEFAULT_MAX_DURATION_SECONDS, toProvider, type CaBackingOptions, type CaProvider } from "./ca-backing.js";
import { defaultPlan, defaultProfile, windowOf, type IssuePlan } from "./issue-plan.js";
import { requestProblem } from "./rules.js";
import type { JobRules, PortableRules } from "../src/pki/pool-rules.js";
import type { IssuedChain, RequestBytes, Signer, SignOptions, SigningRequest, Validation } from "./signer.js";
import { signerNameProblem } from "./signer-name.js";

export type TrustPublication = "ca" | "ca-and-intermediates" | { readonly pems: readonly string[] };

export interface CaSignerOptions extends CaBackingOptions {
  readonly signerName: string;
  /** The signer's own rules, run after the common request checks. */
  readonly check: (request: SigningRequest) => string | undefined;
  /** How to issue an accepted request; default: requested usages, SANs copied, not a CA, requested lifetime. */
  readonly plan?: (request: SigningRequest) => IssuePlan;
  /**
   * `check` as data a worker thread rebuilds it from (src/pki/pool-rules.ts); it must build the very same rule. With
   * the default plan, signBytes() then reads and judges requests where they are signed: the pool's threads in a burst.
   */
  readonly portable?: PortableRules;
  /** What trustAnchors() publishes; default the CA certificate (and earlier CAs still worth trusting). */
  readonly publish?: TrustPublication;
}

/** What a signature waits for when the CA has no files to check (a fixed key pair). */
const NO_CHECK: Promise<unknown> = Promise.resolve();

/** A Signer issuing from a CA; built-in, policy and plug-in signers are this class with their own rules. */
export class CaSigner implements Signer {
  readonly signerName: string;
  readonly maxDurationSeconds: number;
  readonly #provider: CaProvider;
  readonly #check: (request: SigningRequest) => string | undefined;
  readonly #plan: (request: SigningRequest) => IssuePlan;
  readonly #publish: TrustPublication;
  readonly #now: () => Date;
  /** None given: nothing logged (and no logger built, which keeps a one-shot `sign` from loading pino). */
  readonly #logger: Logger | undefined;
  /** Extensions constant for this signer, encoded once. */
  readonly #signerExtensions: readonly Uint8Array[];
  /** The rules for the pool, when they can move there (portable, and a plan that reads nothing of the request). */
  readonly #jobRules: JobRules | undefined;
  /** The provider's check for changed CA files in this turn of the event loop, if one was made. */
  #refreshing: Promise<unknown> | undefined;

  constructor(options: CaSignerOptions) {
    const nameProblem = signerNameProblem(options.signerName);
    if (nameProblem) throw invalidOption("signerName", "to be a qualified name domain/path", options.signerName);
    const max = options.maxDurationSeconds ?? DEFAULT_MAX_DURATION_SECONDS;
    if (!Number.isSafeInteger(max) || max < MIN_EXPIRATION_SECONDS) {
      throw invalidOption("maxDurationSeconds", `to be an integer ≥ ${MIN_EXPIRATION_SECONDS}`, options.maxDurationSeconds);
    }
    if (typeof options.check !== "function") throw invalidOption("check", "to be a function", typeof options.check);
    this.signerName = options.signerName;
    this.maxDurationSeconds = max;
    this.#provider = toProvider(options.ca);
    this.#check = options.check;
    this.#plan = options.plan ?? defaultPlan;
    this.#jobRules = options.portable !== undefined && options.plan === undefined ? { rule: options.check, portable: options.portable } : undefined;
    this.#publish = options.publish ?? "ca";
    this.#now = options.now ?? (() => new Date());
    this.#logger = options.logger;
    this.#signerExtensions = options.crlDistributionPointUrl === undefined ? [] : [crlDistributionPoint(options.crlDistributionPointUrl, this.signerName)];
  }

  /**
   * The provider's check for changed CA files before a signature, made once per turn of the event loop and shared by
   * the turn's signatures: a burst signs hundreds a second, and the check's two stat calls cost ~27 µs a certificate
   * under that load, while a rotation written by another process lands between two turns anyway. (A caller that
   * rewrites the files itself between two signatures of one turn calls the source's refresh() in between.)
   */
  #refreshed(): Promise<unknown> {
    if (this.#refreshing !== undefined) return this.#refreshing;
    const check = this.#provider.refresh?.().catch(() => undefined);
    if (check === undefined) return NO_CHECK;
    this.#refreshing = check;
    setImmediate(() => (this.#refreshing = undefined));
    return check;
  }

  validate(request: SigningRequest): Validation {
    const reason = requestProblem(this.signerName, request) ?? this.#check(request);
    return reason === undefined ? { ok: true } : { ok: false, reason };
  }

  async sign(request: SigningRequest, now: Date, options: SignOptions = {}): Promise<string> {
    return (await this.#sign(request, now, options, true)).pem;
  }

  /**
   * `checked` false: the request was read without its self-signature check; its bytes go to the issuance, which reads
   * and checks them (natively, or through parseCsr) as it signs, on the pool's threads when work is waiting. A plan
   * that rewrote the request (a policy's subject) is issued from the rewrite, so its original is checked here first.
   */
  async #sign(request: SigningRequest, now: Date, options: SignOptions, checked: boolean): Promise<IssuedChain> {
    const validation = this.validate(request);
    if (!validation.ok) {
      // A refusal of a request not yet checked says first what is wrong with its bytes, as a checked read would.
      if (!checked) parseCsr(request.csr.der);
      throw new PlatformError("SIGNER_REJECTED", validation.reason, { details: { signerName: this.signerName } });
    }
    await this.#refreshed();
    const ca = this.#currentCa();
    if (ca instanceof PlatformError) throw ca;
    try {
      const plan = this.#plan(request);
      const validity = computeValidity({
        now,
        ...(plan.expirationSeconds !== undefined && { expirationSeconds: plan.expirationSeconds }),
        maxDurationSeconds: this.maxDurationSeconds,
        caNotBefore: ca.notBefore,
        caNotAfter: ca.notAfter,
      });
      // A key in the process signs synchronously (the fast path), or on the caller's pool when work is waiting;
      // a token key signs off the event loop.
      const issue = { csr: plan.csr, profile: plan.profile, validity, ca, signerExtensions: this.#signerExtensions };
      // Only the pool reads and checks the bytes itself (on its threads, or natively here when nothing waits); the
      // other paths, and a plan that rewrote the request, issue from a parsed request, checked here first.
      const fromBytes = !checked && options.pool !== undefined && plan.csr === request.csr;
      if (!checked && !fromBytes) parseCsr(request.csr.der);
      const issued = options.pool
        ? await options.pool.issue(fromBytes ? { ...issue, csr: request.csr.der } : issue, options.backlog ?? 0)
        : ca.keySigner
          ? await issueCertificateAsync(issue)
          : issueCertificate(issue);
      return this.#issued(ca, issued);
    } catch (error) {
      throw toPlatformError(error);
    }
  }

  /**
   * With portable rules, the default plan and a pool: the common checks (spec fields only) run here, and the bytes, with
   * the signer's rules, go to the pool, which reads, judges, checks and signs them on the thread that signs
   * (pool-rules.ts). Otherwise each request is read here without its check, validated, and checked where it is signed.
   */
  signBytes(requests: readonly RequestBytes[], now: Date, options: SignOptions = {}): Promise<readonly (IssuedChain | PlatformError)[]> {
    const pool = options.pool;
    const backlog = options.backlog ?? 0;
    if (this.#jobRules !== undefined && pool !== undefined) return this.#signBytes(requests, now, pool, backlog, this.#jobRules);
    return Promise.all(requests.map((r, i) => this.#readAndSign(r, now, { ...options, backlog: backlog + requests.length - 1 - i })));
  }

  /** One request read here without its check, validated, and checked where it is signed; its error as a result. */
  async #readAndSign({ der, request }: RequestBytes, now: Date, options: SignOptions): Promise<IssuedChain | PlatformError> {
    try {
      return await this.#sign({ ...request, csr: parseCsr(der, { verify: false }) }, now, options, false);
    } catch (error) {
      return toPlatformError(error);
    }
  }

  async #signBytes(requests: readonly RequestBytes[], now: Date, pool: NonNullable<SignOptions["pool"]>, backlog: number, rules: JobRules): Promise<readonly (IssuedChain | PlatformError)[]> {
    await this.#refreshed();
    const ca = this.#currentCa();
    const here = (bytes: RequestBytes, i: number) => this.#readAndSign(bytes, now, { pool, backlog: backlog + requests.length - 1 - i });
    // No CA, or none valid now: a refusal still comes first, so such requests are validated here, as sign() does.
    if (ca instanceof PlatformError) return Promise.all(requests.map(here));
    const validities = new Map<number | undefined, Validity | PlatformError>();
    const issued = requests.map((bytes, i) => {
      const { der, request } = bytes;
      try {
        const common = requestProblem(this.signerName, request);
        if (common !== undefined) {
          // A broken request reports its reading first, as a checked read would have.
          parseCsr(der);
          throw new PlatformError("SIGNER_REJECTED", common, { details: { signerName: this.signerName } });
        }
        let validity = validities.get(request.expirationSeconds);
        if (validity === undefined) {
          validity = windowOf(ca, now, request.expirationSeconds, this.maxDurationSeconds);
          validities.set(request.expirationSeconds, validity);
        }
        if (validity instanceof PlatformError) return here(bytes, i);
        const job = { ca, csr: der, profile: defaultProfile(request.usages), validity, signerExtensions: this.#signerExtensions, check: { rules, request } };
        return pool.issue(job, backlog + requests.length - 1 - i).then((cert) => this.#issued(ca, cert), toPlatformError);
      } catch (error) {
        return toPlatformError(error);
      }
    });
    return Promise.all(issued);
  }

  /** The chain of a certificate just issued, with its window (as issued: nobody reads it back), recorded with its CA. */
  #issued(ca: CaKeyPair, cert: IssuedCertificate): IssuedChain {
    this.#provider.recordIssued?.(ca, cert.notAfter);
    const logger = this.#logger;
    // Built only when asked for: one per certificate in a burst.
    if (logger?.isLevelEnabled("debug")) logger.debug({ signerName: this.signerName, serial: cert.serialHex, notAfter: cert.notAfter.toISOString() }, "issued certificate");
    return { pem: [cert.pem, ...presentedChain(ca)].map(withNewline).join(""), notBefore: cert.notBefore, notAfter: cert.notAfter };
  }

  trustAnchors(): readonly string[] {
    if (typeof this.#publish === "object") return [...this.#publish.pems];
    const ca = this.#currentCa();
    const current = ca instanceof PlatformError ? undefined : ca;
    const anchors = this.#provider.trustAnchors ? [...this.#provider.trustAnchors(this.#now())] : current ? [current.certPem] : [];
    if (this.#publish === "ca-and-intermediates" && current !== undefined) anchors.push(...current.chainPem);
    return [...new Set(anchors.map(withNewline))];
  }

  ready(): boolean {
    const ca = this.#currentCa();
    if (ca instanceof PlatformError) return false;
    const t = this.#now().getTime();
    return t >= ca.notBefore.getTime() && t < ca.notAfter.getTime();
  }

  crlIssuer(): CrlIssuer | undefined {
    const ca = this.#currentCa();
    return ca instanceof PlatformError ? undefined : crlIssuerFromCa(ca);
  }

  /** The CA in use, or the retryable error that says why there is none. */
  #currentCa(): CaKeyPair | PlatformError {
    let ca: CaKeyPair | undefined;
    let cause: unknown;
    try {
      ca = this.#provider.current();
    } catch (error) {
      cause = error;
    }
    if (ca !== undefined) return ca;
    const message = cause instanceof Error ? `signer ${this.signerName} cannot sign: ${cause.message}` : `signer ${this.signerName} has no CA loaded yet`;
    return new PlatformError("SIGNER_NOT_READY", message, {
      cause,
      details: { signerName: this.signerName },
    });
  }
}

/** The CRLDistributionPoints extension for a configured URL (http or https, ASCII after substitution). */
function crlDistributionPoint(template: string, signerName: string): Uint8Array {
  const url = template.replaceAll("{signerName}", signerName);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || !/^[\x21-\x7e]+$/.test(url)) {
    throw invalidOption("crlDistributionPointUrl", "to be an http or https URL of printable ASCII", url);
  }
  return crlDistributionPointsExtension(url);
}

/**
 * What follows the leaf: nothing for a root CA; for a CA loaded with its chain, the CA certificate itself and then
 * the chain, so a client that trusts only the root can build the path.
 */
function presentedChain(ca: CaKeyPair): readonly string[] {
  return ca.chainPem.length === 0 ? [] : [ca.certPem, ...ca.chainPem];
}

function withNewline(pem: string): string {
  return pem.endsWith("\n") ? pem : `${pem}\n`;
}
