// Issues one leaf certificate with a fresh key: minted directly by a CA, or through a signer's rules like any CSR.
import { leafCsr, mintCertificate, type MintedLeaf, type MintRequest } from "../pki/leaf.js";
import type { Signer } from "../../signers/signer.js";
import { certificateObservation } from "./material.js";
import { signWith } from "./signer-factory.js";
import type { Observation } from "./plan.js";

export interface LeafRequest extends MintRequest {
  /** Issue through this signer's validate + sign instead of minting directly with `ca` (the signer has its own CA). */
  readonly signer?: Signer;
}

export interface IssuedLeaf extends Observation, MintedLeaf {}

/** Generates the key, builds and parses the CSR, then issues; a signer's refusal is SIGNER_REJECTED with its reason. */
export async function issueLeaf(request: LeafRequest): Promise<IssuedLeaf> {
  const { keys, csr } = await leafCsr(request);
  let certPem: string;
  if (request.signer !== undefined) {
    const signing = { signerName: request.signer.signerName, csr, usages: request.usages, expirationSeconds: request.lifetimeSeconds };
    certPem = await signWith(request.signer, signing, request.now);
  } else {
    certPem = mintCertificate(request, csr);
  }
  return { certPem, keyPem: keys.privateKeyPem, ...certificateObservation(certPem) };
}
