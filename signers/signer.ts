// The Signer contract: every built-in, policy-driven and plug-in signer implements this.
import type { PlatformError } from "../src/errors.js";
import type { CrlIssuer } from "../src/pki/crl.js";
import type { RequestFields } from "../src/pki/pool-rules.js";
import type { SigningPool } from "../src/pki/signing-pool.js";
import type { ParsedCsr } from "../src/pki/types.js";

/** Everything a signer may look at to decide: the CSR and the CSR object's spec fields. */
export interface SigningRequest extends RequestFields {
  readonly csr: ParsedCsr;
}

/** A request not read yet: the CSR's DER as the object carries it, and the spec fields. */
export interface RequestBytes {
  readonly der: Uint8Array;
  readonly request: RequestFields;
}

/** An issued PEM chain with the validity of its leaf, so the caller need not read the certificate again. */
export interface IssuedChain {
  readonly pem: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/**
 * How a caller with more work waiting wants the signature made: through its worker pool (src/pki/signing-pool.ts),
 * telling it how many more requests wait. A signer may ignore it; CaSigner uses it for CA keys held in the process.
 */
export interface SignOptions {
  readonly pool?: SigningPool;
  /** Requests waiting behind this one; 0 (the default) keeps a lone request on the calling thread. */
  readonly backlog?: number;
}

/** Result of validate(): accepted, or a terminal reason a person can act on. */
export type Validation =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: string };

export interface Signer {
  readonly signerName: string;
  /** Terminal checks on subject, SANs, usages, extensions and lifetime. Pure: no I/O, no clock. */
  validate(request: SigningRequest): Validation;
  /**
   * Issues the certificate. Returns the PEM chain (leaf first, then intermediates).
   * Throws PlatformError: SIGNER_REJECTED (terminal, same as validate), or a retryable error
   * (CA_EXPIRED, SIGNER_NOT_READY...) when a later attempt may succeed.
   */
  sign(request: SigningRequest, now: Date, options?: SignOptions): Promise<string>;
  /**
   * Optional: validate() and sign() at once for requests given as bytes, so the caller reads nothing: a signer whose
   * rules can move reads, judges, checks and signs them where the signature is made (the pool's threads in a burst).
   * Each request settles alone: its chain, or the PlatformError validate()/sign() would have given it (a broken
   * request's reading error before a refusal, SIGNER_REJECTED with validate()'s reason, a retryable error...). The
   * chain's notBefore/notAfter are its leaf's: the controller reports them without reading the certificate again.
   */
  signBytes?(requests: readonly RequestBytes[], now: Date, options?: SignOptions): Promise<readonly (IssuedChain | PlatformError)[]>;
  /** PEM certificates to publish in this signer's ClusterTrustBundle. */
  trustAnchors(): readonly string[];
  /** Whether the signer can sign now (CA material loaded and valid). */
  ready(): boolean;
  /**
   * Optional: the CA that signs this signer's CRL, through the same key as `sign` (docs/revocation.md); undefined
   * while no CA is loaded. Signers without it publish no CRL.
   */
  crlIssuer?(): CrlIssuer | undefined;
}
