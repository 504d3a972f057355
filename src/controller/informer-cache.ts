// An informer's cache and its handlers: a full list or one watch event changes the cache, and every handler hears what changed.
import type { ApiObject } from "../api/meta.js";
import { PlatformError } from "../errors.js";
import type { Logger } from "../logger.js";
import { objectKey, type InformerHandlers, type Lister } from "./informer-types.js";

export class InformerCache<T extends ApiObject> implements Lister<T> {
  private readonly handlers = new Set<InformerHandlers<T>>();
  private cache = new Map<string, T>();

  constructor(private readonly log: Logger) {}

  addHandlers(handlers: InformerHandlers<T>): () => void {
    this.handlers.add(handlers);
    for (const obj of this.cache.values()) this.call(handlers, "onAdd", obj, true);
    return () => void this.handlers.delete(handlers);
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  /** Replaces the cache with a full list and tells handlers the difference; `initial` marks the first list's adds. */
  replace(items: readonly T[], initial: boolean): void {
    const old = this.cache;
    const next = new Map<string, T>();
    for (const obj of items) next.set(objectKey(obj), obj);
    this.cache = next;
    for (const [key, obj] of next) {
      const before = old.get(key);
      if (!before) this.emit("onAdd", obj, initial);
      else if (before.metadata.resourceVersion !== obj.metadata.resourceVersion) this.emit("onUpdate", before, obj);
    }
    for (const [key, obj] of old) if (!next.has(key)) this.emit("onDelete", obj);
  }

  apply(type: "ADDED" | "MODIFIED" | "DELETED", obj: T): void {
    if (!obj?.metadata?.name) {
      this.log.warn({ type }, "watch event without an object name; skipped");
      return;
    }
    const key = objectKey(obj);
    const before = this.cache.get(key);
    if (type === "DELETED") {
      this.cache.delete(key);
      this.emit("onDelete", obj);
    } else {
      this.cache.set(key, obj);
      if (before) this.emit("onUpdate", before, obj);
      else this.emit("onAdd", obj, false);
    }
  }

  /** The periodic resync: onUpdate(obj, obj) for every cached object. */
  resync(): void {
    for (const obj of this.cache.values()) this.emit("onUpdate", obj, obj);
  }

  private emit<K extends keyof InformerHandlers<T>>(kind: K, ...args: Parameters<NonNullable<InformerHandlers<T>[K]>>): void {
    for (const h of this.handlers) this.call(h, kind, ...args);
  }

  /** One handler's failure is logged and must not stop the others or the informer. */
  private call<K extends keyof InformerHandlers<T>>(h: InformerHandlers<T>, kind: K, ...args: Parameters<NonNullable<InformerHandlers<T>[K]>>): void {
    const fn = h[kind] as ((...a: unknown[]) => unknown) | undefined;
    if (!fn) return;
    const report = (err: unknown): void => this.log.error({ err: describeError(err), handler: kind }, "informer handler failed");
    try {
      const out = fn.apply(h, args);
      if (out instanceof Promise) out.catch(report);
    } catch (err) {
      report(err);
    }
  }
}

export function describeError(err: unknown): unknown {
  if (err instanceof PlatformError) return { code: err.code, message: err.message };
  return err instanceof Error ? { message: err.message } : err;
}
