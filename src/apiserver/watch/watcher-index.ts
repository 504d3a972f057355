// The watchers of one cache, those of a single object kept apart by its name: an event is offered to the watchers of
// every object and to those of its own name only, so a thousand node agents each waiting for its own CSR cost an event
// one lookup instead of a thousand selector checks.
import type { RingEvent } from "./cached-object.js";
import type { CacheWatcher } from "./cache-watcher.js";

/** The name of a stored object: the last segment of its key (`/<group>/<plural>/[<namespace>/]<name>`; names hold no "/"). */
export function keyName(key: string): string {
  return key.slice(key.lastIndexOf("/") + 1);
}

export class WatcherIndex {
  readonly #all = new Set<CacheWatcher>();
  /** Watchers offered every event. */
  readonly #everything = new Set<CacheWatcher>();
  /** Watchers whose selector requires one name (an exact `metadata.name` field selector), by that name. */
  readonly #byName = new Map<string, Set<CacheWatcher>>();
  readonly #nameOf = new Map<CacheWatcher, string>();

  get size(): number {
    return this.#all.size;
  }

  /** `name`: the one object the watcher sees, when its selector requires one name; its filter, if any, decides among its events. */
  add(watcher: CacheWatcher, name: string | undefined): void {
    this.#all.add(watcher);
    if (name === undefined) return void this.#everything.add(watcher);
    let named = this.#byName.get(name);
    if (!named) this.#byName.set(name, (named = new Set()));
    named.add(watcher);
    this.#nameOf.set(watcher, name);
  }

  delete(watcher: CacheWatcher): void {
    this.#all.delete(watcher);
    this.#everything.delete(watcher);
    const name = this.#nameOf.get(watcher);
    if (name === undefined) return;
    this.#nameOf.delete(watcher);
    const named = this.#byName.get(name);
    named?.delete(watcher);
    if (named?.size === 0) this.#byName.delete(name);
  }

  /** Offers a write to the watchers that may see it. */
  offer(event: RingEvent): void {
    for (const watcher of this.#everything) watcher.offer(event);
    const named = this.#byName.get(keyName(event.key));
    if (named) for (const watcher of named) watcher.offer(event);
  }

  /** Every watcher (bookmarks, closing). */
  [Symbol.iterator](): IterableIterator<CacheWatcher> {
    return this.#all.values();
  }
}
