// Encryption at rest as a layer over any byte store (SQLite, later etcd): text in, bytes out, per resource the first
// provider of its rule writes and every provider reads. Keys, revisions and preconditions pass through untouched.
import { performance } from "node:perf_hooks";
import { PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { RowCache } from "../storage/row-cache.js";
import type { ByteStorage, KeyValue, ListResult, Storage, StorageEvent } from "../storage/types.js";
import { TransformationMetrics } from "./metrics.js";
import { mappedWatch } from "./plain-guard.js";
import { covers, type EncryptionConfig } from "./config.js";
import { ENCRYPTED_PREFIX, identity, undecryptable, type Transformer } from "./providers.js";

/** Outcomes of automatic reloads since start, for upstream's `apiserver_encryption_config_controller_automatic_reload*` metrics. */
export interface ReloadStats {
  success: number;
  failure: number;
  /** Unix seconds of the last outcome of each kind. */
  lastSuccess?: number;
  lastFailure?: number;
}

export interface EncryptedStorage extends Storage {
  /** Reads answered by a provider other than the first of their rule since start: objects waiting for a rewrite. */
  staleReads(): number;
  /** Values sealed and opened, for upstream's transformation metrics. */
  readonly transformations: TransformationMetrics;
  /** Health checks of the providers (`kms-providers`), for /healthz and /readyz. */
  checks(): readonly { readonly name: string; run(): Promise<void> }[];
  config(): EncryptionConfig;
  /** Serves with another configuration from now on (a reload); the caller starts and stops its KMS providers. */
  setConfig(config: EncryptionConfig): void;
  /** With automatic reload: how reloads went since start. */
  reloadStats?(): ReloadStats;
}

/** Whether a store is this layer (its stale reads feed a metric). */
export function isEncrypted(storage: Storage): storage is EncryptedStorage {
  return typeof (storage as Partial<EncryptedStorage>).staleReads === "function";
}

const PLAIN: readonly Transformer[] = [identity];

/** A value's plain text, and whether the first provider of its rule read it (nothing to rewrite). */
interface Opened {
  readonly text: string;
  readonly current: boolean;
}

/** `/<group or core>/<resource>/…` → the rule's transformers (identity when no rule names the resource). */
function transformersFor(config: EncryptionConfig): (key: string) => readonly Transformer[] {
  const byCollection = new Map<string, readonly Transformer[]>();
  return (key) => {
    const second = key.indexOf("/", 1);
    const third = second < 0 ? -1 : key.indexOf("/", second + 1);
    const collection = third < 0 ? key : key.slice(0, third);
    let found = byCollection.get(collection);
    if (!found) {
      const group = key.slice(1, second) === "core" ? "" : key.slice(1, second);
      const resource = key.slice(second + 1, third < 0 ? undefined : third);
      found = config.rules.find((rule) => rule.resources.some((pattern) => covers(pattern, resource, group)))?.transformers ?? PLAIN;
      byCollection.set(collection, found);
    }
    return found;
  };
}

/** Whether some transformer of `list` takes the value by its prefix (identity takes anything not encrypted). */
function claimed(list: readonly Transformer[], value: Buffer): boolean {
  return list.some((t) => (t.prefix.length === 0 ? !value.subarray(0, ENCRYPTED_PREFIX.length).equals(ENCRYPTED_PREFIX_BYTES) : value.subarray(0, t.prefix.length).equals(t.prefix)));
}

const ENCRYPTED_PREFIX_BYTES = Buffer.from(ENCRYPTED_PREFIX, "latin1");
const PAGE = 1000;

/**
 * The start-up check: every stored value must carry the prefix of a provider and key its rule lists. A key or provider
 * missing from the file then stops the start, naming where and what wrote the values, instead of failing reads later.
 * (A listed key whose secret changed is found at the first read: that needs the secret, not just the prefix.)
 */
export async function checkProvidersCoverStore(inner: ByteStorage, config: EncryptionConfig): Promise<void> {
  const transformers = transformersFor(config);
  const missing = new Map<string, number>();
  let startAfter: string | undefined;
  for (;;) {
    const page = await inner.list("/", { limit: PAGE, ...(startAfter !== undefined && { startAfter }) });
    for (const kv of page.items) {
      const value = Buffer.from(kv.value.buffer, kv.value.byteOffset, kv.value.byteLength);
      if (claimed(transformers(kv.key), value)) continue;
      const writer = value.subarray(0, 64).toString("latin1").split(":").slice(2, 5);
      const where = `${kv.key.split("/", 3).join("/")} (written by ${writer[0]}/${writer[2]})`;
      missing.set(where, (missing.get(where) ?? 0) + 1);
    }
    if (!page.more || page.items.length === 0) break;
    startAfter = page.items.at(-1)!.key;
  }
  if (missing.size === 0) return;
  const total = [...missing.values()].reduce((a, b) => a + b, 0);
  const list = [...missing].map(([where, count]) => `${count} in ${where}`).join(", ");
  throw new PlatformError("CONFIG_INVALID", `encryption configuration ${config.source} cannot read ${total} stored objects: ${list}; add the missing provider or key (docs/operations.md "Encryption at rest")`);
}

/** Upstream's `kms-providers` check: every KMS provider answers Status (named `kms-provider-<i>` when one fails). */
export async function checkKmsProviders(config: EncryptionConfig): Promise<void> {
  const failed = await Promise.all(config.kms.map((t, i) => t.check().then(() => undefined, (err: Error) => `kms-provider-${i}: ${err.message}`)));
  const reasons = failed.filter((r) => r !== undefined);
  if (reasons.length > 0) throw new Error(reasons.join("; "));
}

export interface EncryptedStorageOptions {
  readonly logger?: Logger;
  /** The configuration may be replaced while serving (`--encryption-provider-config-automatic-reload`). */
  readonly reloadable?: boolean;
}

export function encryptedStorage(inner: ByteStorage, initial: EncryptionConfig, o: EncryptedStorageOptions = {}): EncryptedStorage {
  const logger = o.logger ?? silentLogger();
  let config = initial;
  let transformers = transformersFor(config);
  let stale = 0;
  const warned = new Set<string>();
  const transformations = new TransformationMetrics();
  // The plain text of values read or written lately, each for its key's revision: a value is decrypted (and a KMS
  // plugin asked) once, not at every LIST, GET and watch event, as upstream's watch cache holds decoded objects. A
  // value read through a provider other than the first is not kept, so every such read is still counted and warned of.
  const plain = new RowCache<string>();
  let generation = 0;
  /** The cache, emptied first when a provider's verdicts on staleness may have changed since it was filled. */
  const cache = (): RowCache<string> => {
    let now = 0;
    for (const t of config.kms) now += t.generation();
    if (now !== generation) {
      generation = now;
      plain.clear();
    }
    return plain;
  };
  // The bytes this store sealed, by identity, with their text: the storage hands its watchers a commit before the
  // writer hears of it, so a write's own watch event is known by its bytes before its revision is.
  const sealedHere = new WeakMap<Uint8Array, { readonly text: string; readonly generation: number }>();

  const seal = (key: string, text: string): Buffer => {
    if (typeof text !== "string") throw new PlatformError("INVALID_ARGUMENT", `storage value must be JSON text, got ${typeof text}`);
    const list = transformers(key);
    const first = list[0]!;
    cache();
    const at = performance.now();
    let sealed: Buffer;
    try {
      sealed = first.seal(Buffer.from(text, "utf8"), key);
    } catch (err) {
      if (list !== PLAIN) transformations.record("to_storage", first, at, err);
      throw err;
    }
    // A resource no rule names is written as is, and (as upstream's) not counted as a transformation.
    if (list !== PLAIN) transformations.record("to_storage", first, at);
    const bytes = Buffer.concat([first.prefix, sealed]);
    sealedHere.set(bytes, { text, generation });
    return bytes;
  };

  /**
   * Upstream's order: the first provider whose prefix the value carries; identity (no prefix) may pass to the next.
   * Plain text at once when the key is at hand; a promise when a KMS plugin must unwrap a data key first. `current`:
   * read through the first provider, as a write would seal it now.
   */
  const open = (key: string, value: Uint8Array): Opened | Promise<Opened> => {
    const list = transformers(key);
    const counted = list !== PLAIN;
    const at = performance.now();
    const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    const reasons: string[] = [];
    let failed = false;
    for (let i = 0; i < list.length; i++) {
      const t = list[i]!;
      if (bytes.length < t.prefix.length || !bytes.subarray(0, t.prefix.length).equals(t.prefix)) continue;
      const body = bytes.subarray(t.prefix.length);
      let plain: Buffer | Promise<Buffer>;
      try {
        plain = t.open(body, key);
      } catch (err) {
        reasons.push(`${t.name}: ${(err as Error).message}`);
        // identity refusing encrypted bytes passes them on uncounted, as upstream's does.
        if (t.prefix.length === 0) continue;
        if (counted) transformations.record("from_storage", t, at, err);
        failed = true;
        break;
      }
      const done = (out: Buffer): Opened => {
        if (counted) transformations.record("from_storage", t, at);
        const current = i === 0 && t.stale?.(body) !== true;
        if (!current) markStale(key, t);
        return { text: out.toString("utf8"), current };
      };
      if (!(plain instanceof Promise)) return done(plain);
      return plain.then(done, (err: Error) => {
        if (counted) transformations.record("from_storage", t, at, err);
        throw undecryptable(key, [...reasons, `${t.name}: ${err.message}`]);
      });
    }
    // No provider's prefix matched: upstream counts it under `unknown`.
    const error = undecryptable(key, reasons);
    if (counted && !failed) transformations.unmatched(list, bytes, at, error);
    throw error;
  };

  const markStale = (key: string, t: Transformer): void => {
    stale++;
    const collection = key.split("/", 3).join("/");
    if (warned.has(`${collection} ${t.name}`)) return;
    warned.add(`${collection} ${t.name}`);
    logger.warn({ collection, provider: t.name }, "stored objects are encrypted with a provider (or KMS key ID) other than the current one; run `platform-ca storage rewrite` to re-encrypt them");
  };

  const asText = (kv: KeyValue<Uint8Array>, value: string): KeyValue => ({ key: kv.key, value, createRevision: kv.createRevision, modRevision: kv.modRevision });
  /** The value as text, kept for its revision (a value the first provider reads, or this store wrote just now). */
  const remember = (kv: KeyValue<Uint8Array>, value: string): KeyValue => {
    const out = asText(kv, value);
    cache().set(out);
    return out;
  };
  const kvOut = (kv: KeyValue<Uint8Array>): KeyValue | Promise<KeyValue> => {
    const known = cache().get(kv.key);
    if (known !== undefined && known.modRevision === kv.modRevision && known.createRevision === kv.createRevision) return known;
    const mine = sealedHere.get(kv.value);
    if (mine !== undefined && mine.generation === generation) return remember(kv, mine.text);
    const opened = open(kv.key, kv.value);
    const out = ({ text, current }: Opened): KeyValue => (current ? remember : asText)(kv, text);
    return opened instanceof Promise ? opened.then(out) : out(opened);
  };
  const eventOut = (ev: StorageEvent<Uint8Array>): StorageEvent | Promise<StorageEvent> => {
    // A DELETE's kv and prev are the same entry: decrypted once.
    const same = ev.prev === ev.kv;
    // The previous value first: it may be the one kept for this key, which the new value then replaces.
    const prev = ev.prev === undefined || same ? undefined : kvOut(ev.prev);
    const kv = kvOut(ev.kv);
    if (ev.type === "DELETE") plain.delete(ev.key);
    const build = (k: KeyValue, p: KeyValue | undefined): StorageEvent => (p ? { type: ev.type, key: ev.key, kv: k, prev: p, revision: ev.revision } : { type: ev.type, key: ev.key, kv: k, revision: ev.revision });
    if (!(kv instanceof Promise) && !(prev instanceof Promise)) return build(kv, same ? kv : prev);
    return Promise.all([kv, prev]).then(([k, p]) => build(k, same ? k : p));
  };
  const checks = initial.kms.length > 0 || o.reloadable === true ? [{ name: "kms-providers", run: () => checkKmsProviders(config) }] : [];

  return {
    staleReads: () => stale,
    transformations,
    checks: () => checks,
    config: () => config,
    setConfig(next) {
      config = next;
      transformers = transformersFor(next);
      // What was read under the old configuration is read again under the new one (a provider dropped, or no longer first).
      plain.clear();
    },
    revision: () => inner.revision(),
    compactedRevision: () => inner.compactedRevision(),
    compact: (revision) => inner.compact(revision),
    async close() {
      await inner.close();
      // The store owns its current configuration's KMS providers; a reload closes the ones it replaced.
      for (const t of config.kms) t.close();
    },
    async get(key) {
      const kv = await inner.get(key);
      return kv && kvOut(kv);
    },
    async list(prefix, options): Promise<ListResult> {
      const page = await inner.list(prefix, options);
      const items = page.items.map(kvOut);
      return { ...page, items: items.some((i) => i instanceof Promise) ? await Promise.all(items) : (items as KeyValue[]) };
    },
    async create(key, value, ttlSeconds) {
      return remember(await inner.create(key, seal(key, value), ttlSeconds), value);
    },
    async update(key, value, expectedModRevision, ttlSeconds) {
      return remember(await inner.update(key, seal(key, value), expectedModRevision, ttlSeconds), value);
    },
    async delete(key, expectedModRevision) {
      const r = await inner.delete(key, expectedModRevision);
      // The last value from what is kept, then the key forgotten (not kept again by that read).
      const prev = await kvOut(r.prev);
      plain.delete(key);
      return { revision: r.revision, prev };
    },
    watch: (prefix, options, onEvent, onError) =>
      mappedWatch<Uint8Array>((deliver, progress) => inner.watch(prefix, progress ? { ...options, onProgress: progress } : options, deliver, onError), eventOut, onEvent, onError, options.onProgress),
  };
}
