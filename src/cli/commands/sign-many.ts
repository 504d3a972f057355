// `platform-ca sign --csr a --csr b … --out-dir D`: every CSR signed, on all cores when there are several, one file each.
import { PlatformError, toPlatformError } from "../../errors.js";
import { parseCsr } from "../../pki/csr.js";
import { CERT_MODE, ensureDir, writeFileAtomic } from "../../pki/files.js";
import { SigningPool } from "../../pki/signing-pool.js";
import type { ParsedCsr } from "../../pki/types.js";
import type { Signer, SignOptions, SigningRequest } from "../../../signers/signer.js";

export interface SignManyInput {
  readonly signer: Signer;
  /** The CSR files as given (for messages), their texts and where each chain goes. */
  readonly files: readonly string[];
  readonly texts: readonly string[];
  readonly outDir: string;
  readonly outputs: readonly string[];
  readonly request: (csr: ParsedCsr) => SigningRequest;
  readonly now: Date;
  readonly sign: (signer: Signer, request: SigningRequest, now: Date, options?: SignOptions) => Promise<string>;
}

/**
 * Signs each CSR with the same rules as a single `sign`. All are submitted at once with the count still to come as
 * the backlog, so the pool spreads them over the cores (a lone CSR stays on this thread). A CSR that fails is reported
 * on its own line and the others are still written; the command then fails.
 */
export async function signMany(o: SignManyInput): Promise<void> {
  await ensureDir(o.outDir);
  const pool = new SigningPool();
  const failed: PlatformError[] = [];
  try {
    const results = await Promise.allSettled(
      o.texts.map(async (text, i) => {
        const pem = await o.sign(o.signer, o.request(parseCsr(text)), o.now, { pool, backlog: o.texts.length - 1 - i });
        await writeFileAtomic(o.outputs[i]!, pem, CERT_MODE);
      }),
    );
    results.forEach((r, i) => {
      if (r.status === "fulfilled") return;
      const error = toPlatformError(r.reason);
      failed.push(error);
      process.stderr.write(`error: ${o.files[i]}: ${error.message}\n`);
    });
  } finally {
    await pool.close();
  }
  if (failed.length > 0) throw new PlatformError(failed[0]!.code, `${failed.length} of ${o.texts.length} CSRs were not signed`);
}
