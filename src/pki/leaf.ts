// A fresh key and its parsed CSR, and a leaf certificate minted for it directly by a CA (no signer in between).
import { parseCsr } from "./csr.js";
import { buildCsr, type CsrContent } from "./csr-builder.js";
import { issueCertificate, type IssueRequest } from "./issue.js";
import { generateKeyPair, type GeneratedKeyPair, type KeyType } from "./keys.js";
import type { CaKeyPair, ParsedCsr } from "./types.js";
import { resolveUsages } from "./usages.js";
import { computeValidity } from "./validity.js";

export interface LeafKeyRequest extends CsrContent {
  readonly keyType: KeyType;
  /** A key pair generated ahead (e.g. while the CA is being made); a fresh one of `keyType` otherwise. */
  readonly keys?: Promise<GeneratedKeyPair>;
}

export interface MintRequest extends LeafKeyRequest {
  /** Seed usage strings (`digital signature`, `server auth`...). */
  readonly usages: readonly string[];
  readonly lifetimeSeconds: number;
  readonly ca: CaKeyPair;
  readonly now: Date;
}

export interface MintedLeaf {
  /** Leaf certificate then intermediates, PEM. */
  readonly certPem: string;
  /** PKCS#8 PEM of the new private key. */
  readonly keyPem: string;
}

/** Generates (or awaits) the key, then builds and parses its CSR. */
export async function leafCsr(request: LeafKeyRequest): Promise<{ keys: GeneratedKeyPair; csr: ParsedCsr }> {
  const keys = await (request.keys ?? generateKeyPair(request.keyType));
  return { keys, csr: parseCsr(buildCsr(request, keys)) };
}

/** What the CA issues for `csr`: exactly `lifetimeSeconds` (within the CA's own window), the usages asked for, SANs copied. */
export function mintJob(request: Omit<MintRequest, keyof LeafKeyRequest>, csr: ParsedCsr): IssueRequest & { readonly ca: CaKeyPair } {
  const { ca, lifetimeSeconds, now } = request;
  const validity = computeValidity({ now, expirationSeconds: lifetimeSeconds, maxDurationSeconds: lifetimeSeconds, caNotBefore: ca.notBefore, caNotAfter: ca.notAfter });
  return { ca, csr, validity, profile: { usages: resolveUsages(request.usages), isCa: false, includeSans: true } };
}

/** A minted leaf followed by the CA chain, each PEM ending in a newline. */
export function withChain(ca: CaKeyPair, leafPem: string): string {
  return [leafPem, ...ca.chainPem].map((p) => (p.endsWith("\n") ? p : `${p}\n`)).join("");
}

/** The CA's certificate for `csr` (mintJob), followed by the CA chain. */
export function mintCertificate(request: Omit<MintRequest, keyof LeafKeyRequest>, csr: ParsedCsr): string {
  return withChain(request.ca, issueCertificate(mintJob(request, csr)).pem);
}

/** A new key and a leaf certificate for it, minted by `request.ca`. */
export async function mintLeaf(request: MintRequest): Promise<MintedLeaf> {
  const { keys, csr } = await leafCsr(request);
  return { certPem: mintCertificate(request, csr), keyPem: keys.privateKeyPem };
}
