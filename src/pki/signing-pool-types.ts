// SigningPool's options and its jobs: what a caller gives the pool, and a job waiting for its certificate.
import type { PlatformError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { IssuedCertificate } from "./issue.js";
import type { JobRules, RequestFields } from "./pool-rules.js";
import type { CaKeyPair, CertificateProfile, ParsedCsr, Validity } from "./types.js";
import type { SharedVerifiedMemo } from "./verified-memo.js";

export interface SigningPoolOptions {
  /** Worker threads; default the available parallelism when above 1, else 0 (every job on the calling thread). */
  readonly workers?: number;
  /** Jobs per message to a worker (default 64). */
  readonly batchSize?: number;
  /** Path or file URL of the compiled worker script (default: the compiled signing-pool-worker.js). */
  readonly workerScript?: string | URL;
  readonly logger?: Logger;
  /**
   * What starting the workers costs, in milliseconds of work: they start when a backlog's estimated work reaches it
   * (default 50, about what two workers take to start and load the signing code here; 0 starts them for any backlog).
   */
  readonly startCostMs?: number;
  /**
   * The process's memory of verified requests (default: the one this thread shares, shareVerifiedMemo): a DER request
   * it holds, verified before by the API server's create check or the approver, is issued without a second check.
   */
  readonly verifiedMemo?: SharedVerifiedMemo;
}

export interface PoolJob {
  readonly ca: CaKeyPair;
  /**
   * A parsed (and verified) CSR; or PEM text / DER bytes, then parsed and its signature verified by the pool (DER bytes
   * its memory of verified requests holds are not verified again).
   */
  readonly csr: ParsedCsr | string | Uint8Array;
  readonly profile: CertificateProfile;
  readonly validity: Validity;
  readonly signerExtensions?: readonly Uint8Array[];
  /**
   * A signer's rules and the spec fields they read, applied to a `csr` given as bytes once read, before it is signed
   * (on the thread that signs it): a refusal rejects with SIGNER_REJECTED and the rule's reason, after the reading's
   * own error for a broken request.
   */
  readonly check?: { readonly rules: JobRules; readonly request: RequestFields };
}

/** A job waiting for its certificate: on the queue, or in a batch out to a worker. */
export interface Pending {
  readonly job: PoolJob;
  readonly resolve: (cert: IssuedCertificate) => void;
  readonly reject: (err: PlatformError) => void;
}
