// The state of every namespace (active or being deleted) held in memory, for the check before each namespaced create:
// upstream's NamespaceLifecycle reads its namespace informer the same way, and reads storage only for a name it lacks.
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import { StorageFollower } from "../storage/follower.js";
import type { Storage } from "../storage/types.js";

export type NamespaceState = "active" | "terminating";

export interface NamespaceStatesOptions {
  readonly storage: Storage;
  /** Where the namespaces are stored (`/<core>/namespaces/`); a key's rest is the namespace's name. */
  readonly prefix: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Wait before listing again after a broken watch; default 1000 ms. */
  readonly retryMs?: number;
}

/**
 * A view of the stored namespaces. The storage delivers a commit to its watchers before the writer hears of it, so on
 * one server a namespace created or marked for deletion is seen here before anyone can act on that answer; what
 * another server wrote arrives with its watch, as an informer's lag upstream. Until the first list, and while the
 * view is being listed again after a broken watch and its watch has caught up, it knows nothing (every lookup goes to
 * storage).
 */
export class NamespaceStates {
  readonly #states = new Map<string, NamespaceState>();
  readonly #follower: StorageFollower;
  readonly #prefix: string;
  #live = false;

  constructor(o: NamespaceStatesOptions) {
    this.#prefix = o.prefix;
    this.#follower = new StorageFollower({
      storage: o.storage,
      prefix: o.prefix,
      clock: o.clock,
      retryMs: o.retryMs ?? 1000,
      reset: (items) => {
        this.#live = false;
        this.#states.clear();
        for (const kv of items) this.#set(kv.key, kv.value);
      },
      // Not at the list: writes made between the list and the watch's replay would be missing until then.
      caughtUp: () => (this.#live = true),
      apply: (event) => {
        if (event.type === "DELETE") this.#states.delete(this.#name(event.key));
        else this.#set(event.key, event.kv.value);
      },
      broken: (err) => {
        this.#live = false;
        o.logger.warn({ err }, "namespace cache lost its watch; namespaced creates read storage until it is listed again");
      },
    });
  }

  /** Lists the namespaces, then follows their changes. */
  start(): Promise<void> {
    return this.#follower.start();
  }

  stop(): void {
    this.#live = false;
    this.#follower.stop();
  }

  /** The namespace's state as last seen; undefined when the view has not seen it (or is not current): ask storage. */
  lookup(name: string): NamespaceState | undefined {
    return this.#live ? this.#states.get(name) : undefined;
  }

  /** Every namespace's name as last seen; undefined when the view is not current (ask storage). */
  names(): string[] | undefined {
    return this.#live ? [...this.#states.keys()] : undefined;
  }

  #name(key: string): string {
    return key.slice(this.#prefix.length);
  }

  /** A text the view cannot read is left to storage's read (which reports it), not guessed. */
  #set(key: string, text: string): void {
    const state = stateOf(text);
    if (state) this.#states.set(this.#name(key), state);
    else this.#states.delete(this.#name(key));
  }
}

/** Decoded only when its text names a deletion: most namespaces are active. */
export function stateOf(text: string): NamespaceState | undefined {
  if (!text.includes('"deletionTimestamp"')) return "active";
  try {
    return (JSON.parse(text) as { metadata?: { deletionTimestamp?: unknown } }).metadata?.deletionTimestamp !== undefined ? "terminating" : "active";
  } catch {
    return undefined;
  }
}
