// Stored values as the watch cache holds them, and the events it hands out: JSON is decoded at most once and shared.
import { PlatformError } from "../../errors.js";
import type { KeyValue } from "../storage/types.js";

export type CacheEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

/** One event as every API watcher sees it; resourceVersion of the object is `revision`. */
export interface CacheEvent {
  readonly type: CacheEventType;
  /** Storage key; "" for BOOKMARK. */
  readonly key: string;
  /** JSON text of the object (DELETED: its last state); "" for BOOKMARK. */
  readonly value: string;
  /** JSON text of the state before this event, when there was one. */
  readonly prevValue?: string;
  readonly revision: number;
  /** BOOKMARK only, e.g. the initial-events-end marker. */
  readonly annotations?: Readonly<Record<string, string>>;
  /** The decoded `value` (undefined for BOOKMARK); shared by every watcher, do not mutate. */
  object(): unknown;
  /** The decoded `prevValue`, when there was one. */
  prevObject(): unknown;
}

export type Decoder = (text: string) => unknown;

const UNDECODED = Symbol("undecoded");

/**
 * A stored value. The decoded form is kept only while something pins the value (the bounded event window), so
 * memory for decoded objects stays bounded however many keys the cache holds.
 */
export class CachedObject implements KeyValue {
  readonly key: string;
  readonly value: string;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly #decode: Decoder;
  #decoded: unknown = UNDECODED;
  #pins = 0;

  constructor(kv: KeyValue, decode: Decoder) {
    this.key = kv.key;
    this.value = kv.value;
    this.createRevision = kv.createRevision;
    this.modRevision = kv.modRevision;
    this.#decode = decode;
  }

  object(): unknown {
    if (this.#decoded !== UNDECODED) return this.#decoded;
    let decoded: unknown;
    try {
      decoded = this.#decode(this.value);
    } catch (err) {
      throw new PlatformError("INTERNAL", `stored value of ${this.key} at revision ${this.modRevision} cannot be decoded: ${(err as Error).message}`, { cause: err });
    }
    if (this.#pins > 0) this.#decoded = decoded;
    return decoded;
  }

  pin(): void {
    this.#pins++;
  }

  unpin(): void {
    if (--this.#pins === 0) this.#decoded = UNDECODED;
  }
}

const noObject = (): unknown => undefined;

/** A storage write as the cache keeps it; the per-type views are built once and shared by all watchers. */
export class RingEvent {
  readonly #views = new Map<CacheEventType, CacheEvent>();

  constructor(
    readonly deleted: boolean,
    /** The written value, or for a delete the last value. */
    readonly current: CachedObject,
    readonly previous: CachedObject | undefined,
    readonly revision: number,
  ) {}

  get key(): string {
    return this.current.key;
  }

  /**
   * The event as a watcher sees it: ADDED/MODIFIED carry the new state; DELETED carries the last state that the
   * watcher saw (the previous one), at this event's revision, as upstream does when an object leaves a selector.
   */
  view(type: Exclude<CacheEventType, "BOOKMARK">): CacheEvent {
    let view = this.#views.get(type);
    if (!view) {
      const shown = type === "DELETED" ? (this.previous ?? this.current) : this.current;
      const prev = this.previous;
      view = Object.freeze({
        type,
        key: this.current.key,
        value: shown.value,
        ...(prev ? { prevValue: prev.value } : {}),
        revision: this.revision,
        object: () => shown.object(),
        prevObject: prev ? () => prev.object() : noObject,
      });
      this.#views.set(type, view);
    }
    return view;
  }

  pin(): void {
    this.current.pin();
    this.previous?.pin();
  }

  unpin(): void {
    this.current.unpin();
    this.previous?.unpin();
  }
}

export function bookmark(revision: number, annotations?: Readonly<Record<string, string>>): CacheEvent {
  return Object.freeze({ type: "BOOKMARK", key: "", value: "", revision, ...(annotations ? { annotations } : {}), object: noObject, prevObject: noObject });
}

/** An object of the current state as an initial ADDED event at its own revision. */
export function added(object: CachedObject): CacheEvent {
  return Object.freeze({ type: "ADDED", key: object.key, value: object.value, revision: object.modRevision, object: () => object.object(), prevObject: noObject });
}
