// The ticker: one watcher over a store's whole key range on its watch stream. Its events, in revision order with
// every other synced watcher's, give those watchers per-write progress (watch-stream.ts), and let a write wait, briefly,
// until this server's watchers have been handed it.
import type { EtcdWatchStream } from "./watch-stream.js";

export class EtcdTicker {
  readonly #watches: EtcdWatchStream;
  readonly #range: { readonly key: string; readonly end: string };
  /** The latest revision the store has seen: where a ticker whose history was compacted starts again. */
  readonly #now: () => number;
  #stop: (() => void) | undefined;
  /** Highest revision the ticker has passed on, and the writes waiting for it. */
  #seen = 0;
  #waiters: Array<{ revision: number; resolve: () => void }> = [];
  #closed = false;

  constructor(watches: EtcdWatchStream, range: { readonly key: string; readonly end: string }, now: () => number) {
    this.#watches = watches;
    this.#range = range;
    this.#now = now;
  }

  /** Starts the ticker from the latest revision seen unless it runs. */
  ensure(): void {
    if (this.#stop || this.#closed) return;
    this.#stop = this.#watches.add({
      ...this.#range,
      after: this.#now(),
      last: true,
      // Every write it sees tells the watchers of that range what they still have to deliver; only a ticker that has
      // provably replayed its own history reports progress to the others.
      onEvents: (events, synced) => {
        for (const e of events) {
          this.#watches.tick(e.kv.mod_revision, e.kv.key.toString("latin1"), synced);
          this.#passed(e.kv.mod_revision);
        }
      },
      onProgress: (revision, proven) => {
        if (proven) this.#watches.tick(revision, "");
        this.#passed(revision);
      },
      onError: () => {
        // Compacted below the ticker's cursor after a long disconnect: start over from now.
        this.#stop = undefined;
        this.ensure();
      },
    });
  }

  /**
   * Waits (at most `maxMs`) until the ticker has passed `revision` on, so this server's watchers have it. Not while
   * the stream reconnects: the wait is a courtesy to those watchers, not a condition of the write.
   */
  async passed(revision: number, maxMs: number): Promise<void> {
    if (!this.#stop || this.#seen >= revision || !this.#watches.connected) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxMs);
      this.#waiters.push({ revision, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  close(): void {
    this.#closed = true;
    this.#stop?.();
    for (const w of this.#waiters.splice(0)) w.resolve();
  }

  #passed(revision: number): void {
    this.#seen = Math.max(this.#seen, revision);
    if (this.#waiters.length === 0) return;
    const due = this.#waiters.filter((w) => w.revision <= revision);
    this.#waiters = this.#waiters.filter((w) => w.revision > revision);
    for (const w of due) w.resolve();
  }
}
