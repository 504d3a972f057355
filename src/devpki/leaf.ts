// Issues one leaf certificate with a fresh key: minted directly by a CA, or through a signer's rules like any CSR.
import { parseCsr } from "../pki/csr.js";
import { issueCertificate } from "../pki/issue.js";
import { generateKeyPair, type GeneratedKeyPair, type KeyType } from "../pki/keys.js";
import type { CaKeyPair } from "../pki/types.js";
import { resolveUsages } from "../pki/usages.js";
import { computeValidity } from "../pki/validity.js";
import type { Signer } from "../../signers/signer.js";
import { buildCsr, type CsrContent } from "./csr-builder.js";
import { certificateObservation } from "./material.js";
import { signWith } from "./signer-factory.js";
import type { Observation } from "./plan.js";

export interface LeafRequest extends CsrContent {
  readonly keyType: KeyType;
  /** Seed usage strings (`digital signature`, `server auth`...). */
  readonly usages: readonly string[];
  readonly lifetimeSeconds: number;
  /** The CA that mints it directly; ignored when `signer` is set (the signer has its own CA). */
  readonly ca: CaKeyPair;
  /** Issue through this signer's validate + sign instead of minting directly. */
  readonly signer?: Signer;
  readonly now: Date;
  /** A key pair generated ahead (e.g. while the CA is being made); a fresh one of `keyType` otherwise. */
  readonly keys?: Promise<GeneratedKeyPair>;
}

export interface IssuedLeaf extends Observation {
  /** Leaf certificate then intermediates, PEM. */
  readonly certPem: string;
  /** PKCS#8 PEM of the new private key. */
  readonly keyPem: string;
}

/** Generates the key, builds and parses the CSR, then issues; a signer's refusal is SIGNER_REJECTED with its reason. */
export async function issueLeaf(request: LeafRequest): Promise<IssuedLeaf> {
  const keys = await (request.keys ?? generateKeyPair(request.keyType));
  const csr = parseCsr(buildCsr(request, keys));
  let certPem: string;
  if (request.signer !== undefined) {
    const signing = { signerName: request.signer.signerName, csr, usages: request.usages, expirationSeconds: request.lifetimeSeconds };
    certPem = await signWith(request.signer, signing, request.now);
  } else {
    const { ca, lifetimeSeconds, now } = request;
    const validity = computeValidity({ now, expirationSeconds: lifetimeSeconds, maxDurationSeconds: lifetimeSeconds, caNotBefore: ca.notBefore, caNotAfter: ca.notAfter });
    const issued = issueCertificate({ ca, csr, validity, profile: { usages: resolveUsages(request.usages), isCa: false, includeSans: true } });
    certPem = [issued.pem, ...ca.chainPem].map((p) => (p.endsWith("\n") ? p : `${p}\n`)).join("");
  }
  return { certPem, keyPem: keys.privateKeyPem, ...certificateObservation(certPem) };
}
