// Follows the objects tokens stand for (ServiceAccounts, Pods, Secrets) in storage, so that the token success cache
// forgets a token the moment one of its objects is written or deleted: revocation stays immediate, as without a cache.
import type { Logger } from "../../logger.js";
import type { Clock, CancelTimer } from "../../time/clock.js";
import type { Storage, Watch } from "../storage/types.js";
import { collectionPrefix } from "../registry/generic.js";

/** What the cache is told: an object as `<plural>/<namespace>/<name>`, or that changes were missed. */
export interface TokenObjectListener {
  objectChanged(object: string): void;
  forgetTokens(): void;
}

const PLURALS = ["serviceaccounts", "secrets", "pods"] as const;
/** After a watch fails (a storage that lost its connection): the next one starts this much later. */
const RETRY_MS = 1000;

/**
 * Watches the three collections from now on. A write commits before its answer is sent and a watch hears it as it
 * commits, so a request that follows a delete's answer finds the token forgotten. Should a watch fail, every token
 * is forgotten and the watch starts again a second later (meanwhile remembered tokens are checked again within
 * 10 s, as upstream's cache). Returns the stop.
 */
export function followTokenObjects(storage: Storage, listener: TokenObjectListener, clock: Clock, logger: Logger): () => void {
  const watches = new Map<string, Watch>();
  const retries = new Set<CancelTimer>();
  let stopped = false;
  const watch = (plural: string): void => {
    if (stopped) return;
    const prefix = collectionPrefix("", plural);
    try {
      watches.set(
        plural,
        storage.watch(
          prefix,
          { fromRevision: 0 },
          (event) => listener.objectChanged(`${plural}/${event.key.slice(prefix.length)}`),
          (err) => {
            listener.forgetTokens();
            if (stopped) return;
            logger.warn({ err, prefix }, "the token cache lost track of its objects; tokens are checked again until it follows them again");
            const retry = clock.setTimer(RETRY_MS, () => {
              retries.delete(retry);
              watch(plural);
            });
            retries.add(retry);
          },
        ),
      );
    } catch (err) {
      // A closed storage: nothing to follow, and no request will be served from it either.
      listener.forgetTokens();
      logger.debug({ err, prefix }, "the token cache cannot follow its objects");
    }
  };
  for (const plural of PLURALS) watch(plural);
  return () => {
    stopped = true;
    for (const cancel of retries) cancel();
    for (const w of watches.values()) w.cancel();
  };
}
