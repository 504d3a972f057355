// The one shape of a bounded cache whose entries expire on the one clock (a fake one in tests), checked at every read.
import { LRUCache } from "lru-cache";
import { systemClock, type Clock } from "./clock.js";

/**
 * An LRU of at most `max` entries; each `set` gives its own `ttl` in ms, measured on `clock`. `dispose` is told of
 * every entry that leaves, however it goes (expired on a read, pushed out, deleted, replaced).
 */
export function ttlCache<K extends {}, V extends {}>(max: number, clock: Pick<Clock, "now"> = systemClock, dispose?: (value: V, key: K) => void): LRUCache<K, V> {
  return new LRUCache<K, V>({ max, ttlResolution: 0, ttlAutopurge: false, perf: { now: () => clock.now() }, ...(dispose && { dispose }) });
}
