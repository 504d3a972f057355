// Where a CA-backed signer gets its CA (a key pair or a provider), and the options every such signer takes.
import { invalidOption } from "../src/errors.js";
import type { Logger } from "../src/logger.js";
import type { CaKeyPair } from "../src/pki/types.js";

/** The cluster maximum signing duration when none is configured: one year (8760h), like ClusterSigningDuration. */
export const DEFAULT_MAX_DURATION_SECONDS = 8760 * 3600;

/**
 * Where a signer gets its CA: a fixed key pair, or a source that reloads and rotates it. CaSource (src/pki/ca-source.ts)
 * has this shape; its owner starts it, and sign() refreshes it before each issuance.
 */
export interface CaProvider {
  /** The CA to issue from now; undefined, or a thrown error, while none is loaded. */
  current(): CaKeyPair | undefined;
  /** Cheap check for changed files; called before a signature (a signer makes it once per turn of the event loop). */
  refresh?(): Promise<unknown>;
  /** PEM certificates to publish at `now`: the current CA and earlier ones that still have live certificates. */
  trustAnchors?(now: Date): readonly string[];
  /** Told about each issued certificate, so a rotated-out CA stays published while its certificates live. */
  recordIssued?(ca: CaKeyPair, notAfter: Date): void;
}

export type CaInput = CaKeyPair | CaProvider;

/** Options every CA-backed signer takes. */
export interface CaBackingOptions {
  readonly ca: CaInput;
  /** Cluster maximum certificate lifetime in seconds (ClusterSigningDuration); default 1 year. */
  readonly maxDurationSeconds?: number;
  /** Clock for ready() and trustAnchors(); sign() takes its time as an argument. */
  readonly now?: () => Date;
  readonly logger?: Logger;
  /**
   * URL written as the CRL Distribution Point of every issued certificate; `{signerName}` is replaced by the
   * signer's name. Unset: no such extension.
   */
  readonly crlDistributionPointUrl?: string;
}

function isKeyPair(ca: CaInput): ca is CaKeyPair {
  return typeof (ca as CaKeyPair).certPem === "string" && ((ca as CaKeyPair).privateKey !== undefined || (ca as CaKeyPair).keySigner !== undefined);
}

export function toProvider(ca: CaInput | undefined): CaProvider {
  if (ca === undefined || ca === null || typeof ca !== "object") throw invalidOption("ca", "to be a CA key pair or a CA source", ca);
  if (isKeyPair(ca)) return { current: () => ca };
  if (typeof ca.current !== "function") throw invalidOption("ca", "to be a CA key pair or a CA source", Object.keys(ca));
  return ca;
}
