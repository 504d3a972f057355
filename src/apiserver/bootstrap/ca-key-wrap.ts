// `storage rewrite --ca-key-kms NAME`: wraps the data directory's CA key file with the KMS (or wraps it again under
// the plugin's current key, after a key rotation). The new file is checked to unwrap to the same key before it
// replaces the old one, atomically and 0600.
import { join } from "node:path";
import { PlatformError } from "../../errors.js";
import { readOptional, writeFileAtomic } from "../../pki/files.js";
import { isWrappedKey, unwrapKeyText, wrapKeyPem, type KeyWrapper } from "../../pki/wrapped-key.js";
import { PKI_DIR } from "./pki.js";

export type WrapOutcome = "wrapped" | "rewrapped" | "missing";

export async function wrapCaKey(dataDir: string, wrapper: KeyWrapper): Promise<{ path: string; outcome: WrapOutcome }> {
  const path = join(dataDir, PKI_DIR, "ca.key");
  const text = await readOptional(path);
  if (text === undefined) return { path, outcome: "missing" };
  const pem = await unwrapKeyText(text, path);
  const wrapped = await wrapKeyPem(pem, wrapper);
  if ((await unwrapKeyText(wrapped, path)) !== pem) throw new PlatformError("INTERNAL", `${path}: the wrapped key did not unwrap to the same key; the file is left as it was`);
  await writeFileAtomic(path, wrapped, 0o600);
  return { path, outcome: isWrappedKey(text) ? "rewrapped" : "wrapped" };
}
