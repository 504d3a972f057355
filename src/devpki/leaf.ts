// Issues one leaf certificate with a fresh key: minted directly by a CA, or through a signer's rules like any CSR.
import { leafCsr, mintJob, withChain, type MintedLeaf, type MintRequest } from "../pki/leaf.js";
import { issueCertificate } from "../pki/issue.js";
import type { SigningPool } from "../pki/signing-pool.js";
import type { Signer } from "../../signers/signer.js";
import { certificateObservation } from "./material.js";
import { signWith } from "./signer-factory.js";
import type { Observation } from "./plan.js";

export interface LeafRequest extends MintRequest {
  /** Issue through this signer's validate + sign instead of minting directly with `ca` (the signer has its own CA). */
  readonly signer?: Signer;
  /** Signs through this pool, telling it how many leaves wait behind this one (it keeps cheap runs on this thread). */
  readonly pool?: SigningPool;
  readonly backlog?: number;
}

export interface IssuedLeaf extends Observation, MintedLeaf {}

/** Generates the key, builds and parses the CSR, then issues; a signer's refusal is SIGNER_REJECTED with its reason. */
export async function issueLeaf(request: LeafRequest): Promise<IssuedLeaf> {
  const { keys, csr } = await leafCsr(request);
  let certPem: string;
  if (request.signer !== undefined) {
    const signing = { signerName: request.signer.signerName, csr, usages: request.usages, expirationSeconds: request.lifetimeSeconds };
    certPem = await signWith(request.signer, signing, request.now, request.pool && { pool: request.pool, backlog: request.backlog ?? 0 });
  } else {
    const job = mintJob(request, csr);
    certPem = withChain(request.ca, (request.pool ? await request.pool.issue(job, request.backlog ?? 0) : issueCertificate(job)).pem);
  }
  return { certPem, keyPem: keys.privateKeyPem, ...certificateObservation(certPem) };
}
