// Rewrites every stored object through the storage stack, so each is written again by the first provider of its rule
// (upstream asks for `kubectl get … | kubectl replace -f -` over every resource instead).
import { isPlatformError } from "../../errors.js";
import type { Storage } from "../storage/types.js";

export interface RewriteResult {
  /** Objects written again. */
  readonly rewritten: number;
  /** Objects changed or deleted meanwhile: their newer write already used the first provider. */
  readonly skipped: number;
}

const PAGE = 500;

/** Walks the whole key space in pages; each object is replaced with its own value under a modRevision precondition. */
export async function rewriteAll(storage: Storage, prefix = "/"): Promise<RewriteResult> {
  let rewritten = 0;
  let skipped = 0;
  let startAfter: string | undefined;
  for (;;) {
    const page = await storage.list(prefix, { limit: PAGE, ...(startAfter !== undefined && { startAfter }) });
    for (const kv of page.items) {
      try {
        // The value is the same, re-encoded: a key with a time to live (an Event) keeps the time it has.
        await storage.update(kv.key, kv.value, kv.modRevision, "keep");
        rewritten++;
      } catch (err) {
        if (!isPlatformError(err, "CONFLICT") && !isPlatformError(err, "NOT_FOUND")) throw err;
        skipped++;
      }
    }
    if (!page.more || page.items.length === 0) return { rewritten, skipped };
    startAfter = page.items.at(-1)!.key;
  }
}
