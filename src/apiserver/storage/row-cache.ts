// The latest rows of the keys a SQLite store read or wrote last, kept in memory: an update reads its key twice (the
// registry's read, then the decision inside the commit), a controller reads what it wrote a moment ago. Encryption at
// rest keeps the texts it decrypted in one too.
import { LRUCache } from "lru-cache";
import type { KeyValue, StoredValue } from "./types.js";

/**
 * Characters of values held at most (JSON text is mostly one byte per character in V8's strings): enough for every
 * object a burst of writes touches twice, small beside the SQLite page cache it saves reads from.
 */
const ROW_CACHE_CHARS = 32 * 1024 * 1024;

/**
 * Rows by key, least recently used dropped first. The SQLite store keeps its committed rows here and alone decides
 * what goes in: a row read outside the batch being committed, or written by a batch once it committed; a deleted key
 * leaves. Encryption at rest keeps the plain texts it decrypted or sealed, each for the revisions it was read at. One
 * row is handed to every reader: text is immutable, and the bytes of a byte store (encryption at rest) are only ever
 * read by the layer above (it decrypts from views of them), never changed in place.
 */
export class RowCache<V extends StoredValue> {
  readonly #rows: LRUCache<string, KeyValue<V>>;

  constructor(maxChars = ROW_CACHE_CHARS) {
    this.#rows = new LRUCache<string, KeyValue<V>>({
      maxSize: maxChars,
      // One large object may not push out everything else; it is read from SQLite each time instead.
      maxEntrySize: Math.max(1, Math.floor(maxChars / 8)),
      sizeCalculation: (row) => Math.max(1, row.key.length + row.value.length),
    });
  }

  get(key: string): KeyValue<V> | undefined {
    return this.#rows.get(key);
  }

  /** A row over the entry bound is not kept, and lru-cache then drops the older row of its key too. */
  set(row: KeyValue<V>): void {
    this.#rows.set(row.key, row);
  }

  delete(key: string): void {
    this.#rows.delete(key);
  }

  clear(): void {
    this.#rows.clear();
  }
}
