// Opens CA certificate/key files as a hot-reloading CaSource, failing fast when the first load does not work.
import type { Logger } from "../src/logger.js";
import { CaSource } from "../src/pki/ca-source.js";

export interface CaFileNames {
  /** The CA certificate, optionally followed by its intermediates. */
  readonly certFile: string;
  readonly keyFile: string;
}

/** A CaSource loaded once; it throws the load error (CA_INVALID, KEY_MISMATCH...) instead of starting empty. */
export async function openCaSource(files: CaFileNames, options: { readonly now?: () => Date; readonly logger?: Logger } = {}): Promise<CaSource> {
  const source = new CaSource({
    certFile: files.certFile,
    keyFile: files.keyFile,
    intermediates: true,
    ...(options.now && { clock: options.now }),
    ...(options.logger && { logger: options.logger }),
  });
  await source.load();
  return source;
}
