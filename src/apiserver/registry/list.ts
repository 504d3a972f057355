// LIST over storage or the watch cache: resourceVersion semantics, selectors, limit/continue on one snapshot.
import type { ObjectFilter } from "../selectors.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { isStorableKey } from "../storage/checks.js";
import type { Storage } from "../storage/types.js";
import { badRequest } from "./errors.js";
import { decodeContinue, encodeContinue } from "./continue.js";
import { StoredObject } from "./stored.js";
import { keyName } from "../watch/watcher-index.js";

export type ResourceVersionMatch = "NotOlderThan" | "Exact";

export interface ListQuery {
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: ResourceVersionMatch;
  readonly limit?: number;
  readonly continue?: string;
  /** Selector filter over decoded objects; undefined filters nothing (`name` still selects) and keeps the no-parse fast path. */
  readonly filter?: ObjectFilter;
  /** Only the object of this name (an exact metadata.name field selector), held to by its key: others are skipped undecoded. */
  readonly name?: string;
  /**
   * With `name`: the prefix holds at most one object of that name (a cluster-scoped collection, or one namespace), so
   * a list of the latest state reads that one key, as upstream's registry does for a selector that matches a single
   * object.
   */
  readonly single?: boolean;
}

export interface ListPage {
  readonly items: readonly StoredObject[];
  readonly revision: number;
  readonly continue?: string;
  readonly remainingItemCount?: number;
}

/** The watch cache's view of one collection, as LIST needs it. */
export interface CachedCollection {
  /** Current objects under `prefix` matching `filter`, and the revision the cache has seen. */
  list(prefix: string, filter: ObjectFilter | undefined, name?: string): Promise<{ items: readonly StoredObject[]; revision: number }>;
  /** Resolves once the cache has seen `revision` (or rejects with TIMEOUT). */
  waitUntilFresh(revision: number): Promise<void>;
}

const MAX_PAGE_READS = 1000;

export function parseRevision(text: string, what = "resourceVersion"): number {
  if (!/^\d{1,15}$/.test(text)) throw badRequest(`invalid ${what} ${JSON.stringify(text)}: expected a decimal revision`);
  return Number(text);
}

/** Reads one page (or the whole collection) under `prefix` with upstream's resourceVersion rules. */
export async function listCollection(storage: Storage, cache: CachedCollection | undefined, prefix: string, q: ListQuery): Promise<ListPage> {
  const rv = q.resourceVersion ?? "";
  if (q.resourceVersionMatch !== undefined && rv === "") throw badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided");
  // A namespace no storage key can hold (from the request path) has no objects.
  if (!isStorableKey(prefix)) return { items: [], revision: await storage.revision() };
  if (q.continue !== undefined && q.continue !== "") {
    if (rv !== "" && rv !== "0") throw badRequest("specifying resourceVersion is not allowed when using continue");
    const token = decodeContinue(q.continue, prefix);
    return readPages(storage, prefix, q, token.revision, token.startAfter, true);
  }
  if (q.resourceVersionMatch === "Exact") {
    if (rv === "0") throw badRequest('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"');
    return readPages(storage, prefix, q, parseRevision(rv), undefined, false);
  }
  if (rv !== "" && cache !== undefined && !(q.limit && rv !== "0" && q.resourceVersionMatch === undefined)) {
    // "0": any recent state, straight from the cache. NotOlderThan N: wait until the cache has seen N.
    const min = parseRevision(rv);
    if (min > 0) await cache.waitUntilFresh(min);
    const { items, revision } = await cache.list(prefix, q.filter, q.name);
    return { items, revision };
  }
  if (rv !== "") {
    const min = parseRevision(rv);
    const latest = await storage.revision();
    if (min > latest) throw new PlatformError("TIMEOUT", `Too large resource version: ${min}, current resource version: ${latest}`, { details: { retryAfterSeconds: 1 } });
    if (q.resourceVersionMatch === undefined && q.limit && min > 0) return readPages(storage, prefix, q, min, undefined, false);
  }
  // The latest state of one name where only one object can hold it: that key alone, as upstream's single-object list.
  if (q.name !== undefined && q.single === true) return readOne(storage, prefix + q.name, q);
  return readPages(storage, prefix, q, undefined, undefined, false);
}

/** The latest state of the one object `key` can hold, at storage's current revision; no continue: nothing is after it. */
async function readOne(storage: Storage, key: string, q: ListQuery): Promise<ListPage> {
  // The revision first: an object written after it is still current, as a list's snapshot at a later revision would hold.
  const revision = await storage.revision();
  if (!isStorableKey(key)) return { items: [], revision };
  const kv = await storage.get(key);
  const stored = kv && StoredObject.of(kv);
  return { items: stored && (!q.filter || selected(q.filter, stored)) ? [stored] : [], revision: Math.max(revision, kv?.modRevision ?? 0) };
}

/** Whether `filter` selects the stored object, decoding it only when its text may match. */
function selected(filter: ObjectFilter, stored: StoredObject): boolean {
  return filter.mayMatch?.(stored.text) !== false && filter(stored.object);
}

async function readPages(storage: Storage, prefix: string, q: ListQuery, revision: number | undefined, startAfter: string | undefined, continuing: boolean): Promise<ListPage> {
  const limit = q.limit && q.limit > 0 ? q.limit : 0;
  const items: StoredObject[] = [];
  let after = startAfter;
  let rev = revision;
  let more = false;
  let remaining: number | undefined;
  for (let reads = 0; reads < MAX_PAGE_READS; reads++) {
    let page;
    try {
      page = await storage.list(prefix, { revision: rev, limit: limit ? limit - items.length : 0, startAfter: after });
    } catch (err) {
      if (isPlatformError(err, "GONE")) {
        throw new PlatformError("GONE", continuing
          ? "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results."
          : `The resourceVersion for the provided list is too old (relist without resourceVersion): ${err.message}`);
      }
      throw err;
    }
    rev = page.revision;
    for (const kv of page.items) {
      const stored = StoredObject.of(kv);
      after = kv.key;
      if (q.name !== undefined && keyName(kv.key) !== q.name) continue;
      if (q.filter && !selected(q.filter, stored)) continue;
      items.push(stored);
    }
    more = page.more;
    remaining = page.remaining;
    if (!more || (limit && items.length >= limit)) break;
  }
  const result: ListPage = { items, revision: rev ?? 0 };
  if (!more) return result;
  return {
    ...result,
    continue: encodeContinue({ revision: rev!, startAfter: after! }, prefix),
    // Only exact without a filter: with selectors the count of matching items ahead is unknown.
    ...(q.filter === undefined && q.name === undefined && remaining !== undefined ? { remainingItemCount: remaining } : {}),
  };
}
