// An in-memory API for one resource behind the client contract: revisions, paged snapshots, watches, 410, faults.
import type { ApiList, ApiObject, Status } from "../../src/api/meta.js";
import type { ListParams, ResourceClient, WatchEvent, WatchParams, WriteParams } from "../../src/client/types.js";
import { PlatformError } from "../../src/errors.js";
import { objectKey } from "../../src/controller/informer.js";
import type { Clock } from "../../src/time/clock.js";

export type Op = "list" | "watch" | "get" | "create" | "update" | "patch" | "delete";

interface Stream<T extends ApiObject> {
  readonly namespace?: string;
  readonly queue: WatchEvent<T>[];
  wake: () => void;
  closed: boolean;
  /** A stalled stream stays open but never delivers again, like a dead connection nobody noticed. */
  stalled: boolean;
  error?: Error;
}

const clone = <V>(v: V): V => structuredClone(v);

/** The server side: objects, one revision counter, an event log with a compaction point, open watch streams. */
export class FakeStore<T extends ApiObject> {
  rev = 1;
  compactedRev = 0;
  readonly objects = new Map<string, T>();
  readonly log: { rev: number; event: WatchEvent<T> }[] = [];
  readonly streams = new Set<Stream<T>>();
  private readonly snapshots = new Map<string, { rv: string; items: T[] }>();
  private tokens = 0;
  private uids = 0;

  constructor(readonly options: { kind?: string; apiVersion?: string; now?: () => number; goneAsEvent?: boolean } = {}) {}

  /** A client handle with its own faults and call log. */
  client(): FakeClient<T> {
    return new FakeClient(this);
  }

  /** A fresh object of this kind. */
  make(name: string, fields: Partial<T> & { namespace?: string } = {}): T {
    const { namespace, ...rest } = fields;
    return {
      apiVersion: this.options.apiVersion ?? "v1",
      kind: this.options.kind ?? "Thing",
      ...rest,
      metadata: { name, ...(namespace ? { namespace } : {}), ...(rest.metadata ?? {}) },
    } as T;
  }

  /** Server-side create-or-replace without preconditions; returns the stored object. */
  put(obj: T): T {
    const key = objectKey(obj);
    const before = this.objects.get(key);
    const stored = clone(obj);
    stored.metadata = {
      ...stored.metadata,
      uid: before?.metadata.uid ?? stored.metadata.uid ?? `uid-${++this.uids}`,
      creationTimestamp: before?.metadata.creationTimestamp ?? new Date(this.options.now?.() ?? 0).toISOString(),
      resourceVersion: String(++this.rev),
    };
    this.objects.set(key, stored);
    this.append(before ? "MODIFIED" : "ADDED", stored);
    return clone(stored);
  }

  remove(key: string): void {
    const before = this.objects.get(key);
    if (!before) return;
    this.objects.delete(key);
    const final = clone(before);
    final.metadata.resourceVersion = String(++this.rev);
    this.append("DELETED", final);
  }

  /** Forgets history: watches from older revisions and old continue tokens answer 410. */
  compact(): void {
    this.compactedRev = this.rev;
    this.log.length = 0;
    this.snapshots.clear();
  }

  bookmark(): void {
    this.send({ type: "BOOKMARK", object: { apiVersion: "v1", kind: this.options.kind ?? "Thing", metadata: { resourceVersion: String(this.rev) } } as T });
  }

  /** Sends an ERROR event carrying a Status with `code` on every open stream. */
  errorEvent(code: number, message = "watch error"): void {
    const status: Status = { apiVersion: "v1", kind: "Status", metadata: {}, status: "Failure", code, message, reason: code === 410 ? "Expired" : "InternalError" };
    this.send({ type: "ERROR", object: status as WatchEvent<T>["object"] });
  }

  /** Ends every open stream cleanly (the server's watch timeout, a graceful restart). */
  closeWatches(): void {
    for (const s of this.streams) {
      s.closed = true;
      s.wake();
    }
  }

  /** Breaks every open stream with a connection error. */
  breakWatches(message = "connection reset"): void {
    for (const s of this.streams) {
      s.error = new PlatformError("IO_ERROR", message);
      s.wake();
    }
  }

  stallWatches(): void {
    for (const s of this.streams) s.stalled = true;
  }

  openWatches(): number {
    return [...this.streams].filter((s) => !s.closed && !s.stalled && !s.error).length;
  }

  list(params: ListParams = {}): ApiList<T> {
    let snap: { rv: string; items: T[] };
    if (params.continue) {
      const found = this.snapshots.get(params.continue);
      if (!found) throw new PlatformError("GONE", "the continue token has expired");
      snap = found;
      this.snapshots.delete(params.continue);
    } else {
      const items = [...this.objects.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, o]) => o);
      snap = { rv: String(this.rev), items: items.filter((o) => !params.namespace || o.metadata.namespace === params.namespace) };
    }
    const limit = params.limit && params.limit > 0 ? params.limit : snap.items.length;
    const page = snap.items.slice(0, limit);
    const rest = snap.items.slice(limit);
    let token: string | undefined;
    if (rest.length > 0) {
      token = `t${++this.tokens}`;
      this.snapshots.set(token, { rv: snap.rv, items: rest });
    }
    return { apiVersion: "v1", kind: "List", metadata: { resourceVersion: snap.rv, ...(token ? { continue: token } : {}) }, items: clone(page) };
  }

  async *watch(params: WatchParams): AsyncGenerator<WatchEvent<T>> {
    const from = Number(params.resourceVersion || this.rev);
    if (from < this.compactedRev) {
      if (!this.options.goneAsEvent) throw new PlatformError("GONE", `too old resource version: ${from} (${this.compactedRev})`);
      const status: Status = { apiVersion: "v1", kind: "Status", metadata: {}, status: "Failure", code: 410, reason: "Expired", message: "too old resource version" };
      yield { type: "ERROR", object: status as WatchEvent<T>["object"] };
      return;
    }
    const stream: Stream<T> = { namespace: params.namespace, queue: [], wake: () => {}, closed: false, stalled: false };
    for (const { rev, event } of this.log) if (rev > from && this.matches(stream, event)) stream.queue.push(clone(event));
    this.streams.add(stream);
    try {
      while (!params.signal.aborted) {
        if (stream.error) throw stream.error;
        const next = stream.queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (stream.closed) return;
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            params.signal.removeEventListener("abort", wake);
            resolve();
          };
          stream.wake = wake;
          params.signal.addEventListener("abort", wake, { once: true });
        });
      }
    } finally {
      this.streams.delete(stream);
    }
  }

  private append(type: "ADDED" | "MODIFIED" | "DELETED", object: T): void {
    const event: WatchEvent<T> = { type, object };
    this.log.push({ rev: this.rev, event });
    this.send(event);
  }

  private send(event: WatchEvent<T>): void {
    for (const s of this.streams) {
      if (s.stalled || s.closed || !this.matches(s, event)) continue;
      s.queue.push(clone(event));
      s.wake();
    }
  }

  private matches(stream: Stream<T>, event: WatchEvent<T>): boolean {
    return !stream.namespace || event.type === "BOOKMARK" || event.type === "ERROR" || (event.object as T).metadata.namespace === stream.namespace;
  }
}

/** A client handle on a FakeStore, with faults that apply to this handle only. */
export class FakeClient<T extends ApiObject> implements ResourceClient<T> {
  /** Every call, in order: the operation and its parameters. */
  readonly calls: { op: Op; params: unknown }[] = [];
  /** While true every call fails as if the server were unreachable. */
  down = false;
  /** When set, every call waits this long on the clock before the server acts on it. */
  latency: { clock: Clock; ms: number } | undefined;
  private readonly failures: { op: Op; error: Error }[] = [];
  private readonly hangs = new Set<Op>();

  constructor(readonly store: FakeStore<T>) {}

  failNext(op: Op, error: Error = new PlatformError("INTERNAL", `injected ${op} failure`), times = 1): void {
    for (let i = 0; i < times; i++) this.failures.push({ op, error });
  }

  /** The next call of `op` never answers and ignores its signal. */
  hangNext(op: Op): void {
    this.hangs.add(op);
  }

  count(op: Op): number {
    return this.calls.filter((c) => c.op === op).length;
  }

  async list(params: ListParams = {}): Promise<ApiList<T>> {
    await this.enter("list", params);
    return this.store.list(params);
  }

  watch(params: WatchParams): AsyncIterable<WatchEvent<T>> {
    const enter = this.enter("watch", params);
    const store = this.store;
    return (async function* () {
      await enter;
      yield* store.watch(params);
    })();
  }

  async get(name: string, options: { namespace?: string } = {}): Promise<T> {
    await this.enter("get", { name, ...options });
    const found = this.store.objects.get(options.namespace ? `${options.namespace}/${name}` : name);
    if (!found) throw new PlatformError("NOT_FOUND", `${name} not found`);
    return clone(found);
  }

  async create(obj: T, params: WriteParams & { namespace?: string } = {}): Promise<T> {
    await this.enter("create", obj);
    const withNs = params.namespace ? { ...obj, metadata: { ...obj.metadata, namespace: params.namespace } } : obj;
    if (this.store.objects.has(objectKey(withNs))) throw new PlatformError("ALREADY_EXISTS", `${obj.metadata.name} already exists`);
    return this.store.put(withNs);
  }

  async update(obj: T): Promise<T> {
    await this.enter("update", obj);
    const current = this.store.objects.get(objectKey(obj));
    if (!current) throw new PlatformError("NOT_FOUND", `${obj.metadata.name} not found`);
    const rv = obj.metadata.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion) throw new PlatformError("CONFLICT", `${obj.metadata.name} was modified`);
    return this.store.put(obj);
  }

  async patch(name: string, patchType: "json" | "merge" | "strategic", patch: unknown, params: { namespace?: string } = {}): Promise<T> {
    await this.enter("patch", { name, patchType, patch, ...params });
    if (patchType !== "merge") throw new PlatformError("UNSUPPORTED_MEDIA_TYPE", `the fake applies merge patches only, got ${patchType}`);
    const current = this.store.objects.get(params.namespace ? `${params.namespace}/${name}` : name);
    if (!current) throw new PlatformError("NOT_FOUND", `${name} not found`);
    return this.store.put(mergePatch(current, patch) as T);
  }

  async delete(name: string, options: { namespace?: string } = {}): Promise<void> {
    await this.enter("delete", { name, ...options });
    const key = options.namespace ? `${options.namespace}/${name}` : name;
    if (!this.store.objects.has(key)) throw new PlatformError("NOT_FOUND", `${name} not found`);
    this.store.remove(key);
  }

  private async enter(op: Op, params: unknown): Promise<void> {
    this.calls.push({ op, params });
    await Promise.resolve();
    if (this.latency) await this.latency.clock.sleep(this.latency.ms);
    if (this.down) throw new PlatformError("IO_ERROR", "connect ECONNREFUSED 127.0.0.1:6443");
    if (this.hangs.delete(op)) await new Promise(() => {});
    const i = this.failures.findIndex((f) => f.op === op);
    if (i >= 0) throw this.failures.splice(i, 1)[0]!.error;
  }
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return clone(patch);
  const out: Record<string, unknown> = typeof target === "object" && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
