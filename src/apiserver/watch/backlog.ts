// What a new watcher receives before live events: the ring's history after its revision, or the initial state.
import { added, bookmark, type CacheEvent, type CachedObject, type RingEvent } from "./cached-object.js";
import { selects, transition, type WatchFilter } from "./cache-watcher.js";
import { keyName } from "./watcher-index.js";

/** Upstream's marker on the BOOKMARK that ends the initial events of a `sendInitialEvents` watch. */
export const INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end";

/**
 * Replays recorded events through the watcher's filter; produced lazily, as the reader asks. `name`: the one object
 * the watcher sees, `prefix`: its scope — others are passed over by their key, without decoding them for the filter.
 */
export function* historyEvents(events: readonly RingEvent[], filter: WatchFilter | undefined, name?: string, prefix?: string): Generator<CacheEvent> {
  for (const event of events) {
    if (name !== undefined && keyName(event.key) !== name) continue;
    if (prefix !== undefined && !event.key.startsWith(prefix)) continue;
    const seen = transition(event, filter);
    if (seen) yield seen;
  }
}

/** ADDED for each current object passing the filter (`name`: as above), then (when asked) the initial-events-end BOOKMARK. */
export function* initialEvents(
  objects: readonly CachedObject[],
  filter: WatchFilter | undefined,
  end: { readonly revision: number; readonly annotation: string } | undefined,
  name?: string,
): Generator<CacheEvent> {
  for (const object of objects) {
    if (name !== undefined && keyName(object.key) !== name) continue;
    if (!filter || selects(filter, object)) yield added(object);
  }
  if (end) yield bookmark(end.revision, { [end.annotation]: "true" });
}
