// Keeps a local cache of one resource in step with the server (list, then watch) and tells handlers what changed.
import type { ApiObject, Status } from "../api/meta.js";
import type { ListWatcher, WatchEvent } from "../client/types.js";
import { invalidOption, isPlatformError, PlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { JitteredBackoff } from "../time/backoff.js";
import { systemClock, type CancelTimer, type Clock } from "../time/clock.js";
import { describeError, InformerCache } from "./informer-cache.js";
import type { InformerHandlers, InformerOptions, Lister } from "./informer-types.js";

export { objectKey, stripManagedFields, type InformerHandlers, type InformerOptions, type Lister } from "./informer-types.js";

/** A watch that ends this soon without any event counts as a failure (a server refusing or dropping watches). */
const SHORT_WATCH_MS = 1000;

type WatchEnd = "closed" | "stalled" | "gone" | "failed" | "stopped";

interface WatchResult {
  readonly end: WatchEnd;
  readonly resourceVersion: string;
  readonly events: number;
  readonly error?: unknown;
}

export class Informer<T extends ApiObject> implements Lister<T> {
  readonly name: string;
  private readonly lw: ListWatcher<T>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly random: () => number;
  private readonly pageSize: number;
  private readonly stallTimeoutMs: number;
  private readonly resyncMs: number;
  private readonly watchTimeoutSeconds: number;
  private readonly backoff: JitteredBackoff;
  private readonly cache: InformerCache<T>;
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private resourceVersion: string | undefined;
  private controller: AbortController | undefined;
  private running: Promise<void> | undefined;
  private cancelResync: CancelTimer | undefined;

  constructor(private readonly options: InformerOptions<T>) {
    this.lw = options.listWatcher;
    this.name = options.name ?? "informer";
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ informer: this.name });
    this.random = options.random ?? Math.random;
    this.pageSize = wholeAtLeast("pageSize", options.pageSize, 500, 1);
    this.stallTimeoutMs = wholeAtLeast("stallTimeoutMs", options.stallTimeoutMs, 300_000, 1);
    this.watchTimeoutSeconds = wholeAtLeast("watchTimeoutSeconds", options.watchTimeoutSeconds, 300, 1);
    const minResync = wholeAtLeast("minResyncPeriodMs", options.minResyncPeriodMs, 0, 0);
    this.resyncMs = minResync === 0 ? 0 : Math.round(minResync * (1 + this.random()));
    this.backoff = new JitteredBackoff(options.backoff, this.random);
    this.cache = new InformerCache(this.log);
  }

  /** Adds handlers; when the cache already holds objects they are replayed as adds. Returns a remover. */
  addHandlers(handlers: InformerHandlers<T>): () => void {
    return this.cache.addHandlers(handlers);
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(): T[] {
    return this.cache.list();
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves true once the first full list is delivered, false if `signal` aborts or the informer stops first. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = (): void => resolve(false);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve(this.synced);
      });
    });
  }

  /** The resourceVersion the informer is caught up to. */
  lastSyncResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  start(signal?: AbortSignal): void {
    if (this.controller) throw new PlatformError("INVALID_ARGUMENT", `informer ${this.name} is already started`);
    const controller = new AbortController();
    this.controller = controller;
    if (signal?.aborted) controller.abort();
    else signal?.addEventListener("abort", () => controller.abort(), { once: true });
    this.running = this.run(controller.signal).finally(() => {
      this.cancelResync?.();
      for (const wake of this.syncWaiters.splice(0)) wake();
    });
  }

  async stop(): Promise<void> {
    this.controller?.abort();
    await this.running;
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let rv: string;
      try {
        rv = await this.listAndReplace(signal);
      } catch (err) {
        if (signal.aborted) return;
        await this.pause("list failed", err, signal);
        continue;
      }
      for (;;) {
        const result = await this.watchOnce(rv, signal);
        rv = result.resourceVersion;
        if (result.end === "stopped") return;
        if (result.end === "stalled") {
          this.log.warn({ resourceVersion: rv, stallTimeoutMs: this.stallTimeoutMs }, "watch stalled; restarting it");
          continue;
        }
        if (result.end === "closed") continue;
        // GONE after a healthy watch is ordinary compaction: relist at once; anything else waits first.
        if (result.end === "failed" || result.events === 0) await this.pause(`watch ${result.end}`, result.error, signal);
        else this.log.info({ resourceVersion: rv }, "resource version expired; relisting");
        break;
      }
    }
  }

  private async pause(what: string, err: unknown, signal: AbortSignal): Promise<void> {
    const delay = this.backoff.next(this.clock.now());
    this.log.warn({ err: describeError(err), retryInMs: Math.round(delay) }, `${what}; retrying`);
    await this.clock.sleep(delay, signal);
  }

  /** Lists every page, replaces the cache and tells handlers the difference; returns the list's resourceVersion. */
  private async listAndReplace(signal: AbortSignal): Promise<string> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = "";
    do {
      const params = { namespace: this.options.namespace, labelSelector: this.options.labelSelector, fieldSelector: this.options.fieldSelector };
      const page = await this.bounded((s) => this.lw.list({ ...params, limit: this.pageSize, continue: cont, signal: s }), signal, "list");
      const transform = this.options.transform;
      items.push(...(transform ? page.items.map(transform) : page.items));
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion ?? rv;
    } while (cont);
    this.cache.replace(items, !this.synced);
    this.resourceVersion = rv;
    if (!this.synced) {
      this.synced = true;
      for (const wake of this.syncWaiters.splice(0)) wake();
      this.armResync();
    }
    return rv;
  }

  /** Runs one request with the stall timeout as its deadline, so a hung list cannot hold the informer. */
  private async bounded<R>(run: (signal: AbortSignal) => Promise<R>, outer: AbortSignal, what: string): Promise<R> {
    const controller = new AbortController();
    const stop = (): void => controller.abort();
    outer.addEventListener("abort", stop, { once: true });
    let timedOut = false;
    const cancel = this.clock.setTimer(this.stallTimeoutMs, () => {
      timedOut = true;
      controller.abort();
    });
    const aborted = new Promise<never>((_, reject) =>
      controller.signal.addEventListener("abort", () => reject(new PlatformError("TIMEOUT", timedOut ? `${what} took longer than ${this.stallTimeoutMs} ms` : `${what} cancelled`)), { once: true }),
    );
    aborted.catch(() => {});
    try {
      if (outer.aborted) controller.abort();
      return await Promise.race([run(controller.signal), aborted]);
    } finally {
      cancel();
      outer.removeEventListener("abort", stop);
      controller.abort();
    }
  }

  private async watchOnce(fromRv: string, outer: AbortSignal): Promise<WatchResult> {
    const controller = new AbortController();
    const stop = (): void => controller.abort();
    outer.addEventListener("abort", stop, { once: true });
    let stalled = false;
    let cancelStall: CancelTimer = () => {};
    const armStall = (): void => {
      cancelStall();
      cancelStall = this.clock.setTimer(this.stallTimeoutMs, () => {
        stalled = true;
        controller.abort();
      });
    };
    // Each read of the stream waits on a promise of its own that the read or the abort settles. Not Promise.race
    // against one promise for the whole watch: every race leaves a reaction on that still-pending promise, and the
    // reaction holds the race's result (the event, its object whole) until the watch ends — a burst's watch held
    // 35,000 events, which each scavenge copied.
    let wakeOnAbort: ((step: "aborted") => void) | undefined;
    controller.signal.addEventListener("abort", () => wakeOnAbort?.("aborted"), { once: true });
    const startedAt = this.clock.now();
    let rv = fromRv;
    let events = 0;
    const result = (end: WatchEnd, error?: unknown): WatchResult => ({ end, resourceVersion: rv, events, error });
    armStall();
    let iterator: AsyncIterator<WatchEvent<T>> | undefined;
    try {
      iterator = this.lw
        .watch({
          namespace: this.options.namespace,
          labelSelector: this.options.labelSelector,
          fieldSelector: this.options.fieldSelector,
          resourceVersion: fromRv,
          allowWatchBookmarks: true,
          timeoutSeconds: Math.round(this.watchTimeoutSeconds * (1 + this.random())),
          signal: controller.signal,
        })
        [Symbol.asyncIterator]();
      for (;;) {
        // Racing the abort keeps a client that ignores the signal from holding the informer forever.
        const next = iterator.next();
        // Once abandoned on abort, a late rejection of this read must not surface as unhandled.
        next.catch(() => {});
        if (controller.signal.aborted) break;
        const step = await new Promise<IteratorResult<WatchEvent<T>> | "aborted">((resolve, reject) => {
          wakeOnAbort = resolve;
          next.then(resolve, reject);
        });
        wakeOnAbort = undefined;
        if (step === "aborted") break;
        if (step.done) {
          const short = events === 0 && this.clock.now() - startedAt < SHORT_WATCH_MS;
          return short ? result("failed", new PlatformError("NOT_READY", "watch closed at once without events")) : result("closed");
        }
        armStall();
        const ev = step.value;
        if (ev.type === "ERROR") {
          const status = ev.object as Status;
          const error = new PlatformError(status.code === 410 ? "GONE" : "INTERNAL", status.message ?? `watch error ${status.code}`);
          return result(status.code === 410 ? "gone" : "failed", error);
        }
        events++;
        rv = ev.object.metadata.resourceVersion ?? rv;
        this.resourceVersion = rv;
        if (ev.type !== "BOOKMARK") this.cache.apply(ev.type, this.options.transform ? this.options.transform(ev.object as T) : (ev.object as T));
      }
    } catch (err) {
      if (!stalled && !outer.aborted) return result(isPlatformError(err, "GONE") ? "gone" : "failed", err);
    } finally {
      cancelStall();
      outer.removeEventListener("abort", stop);
      controller.abort();
      void iterator?.return?.().catch(() => {});
    }
    return result(outer.aborted ? "stopped" : "stalled");
  }

  private armResync(): void {
    if (this.resyncMs === 0 || this.controller?.signal.aborted) return;
    this.cancelResync = this.clock.setTimer(this.resyncMs, () => {
      this.cache.resync();
      this.armResync();
    });
  }
}

function wholeAtLeast(name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min) throw invalidOption(name, `to be a whole number ≥ ${min}`, value);
  return v;
}
