// The etcd watch stream against responses in the orders etcd really sends them: a watcher replaying its history in
// batches of 1,000 revisions while the ticker already gets live writes, and a watcher's responses late behind the
// ticker's (a slow reader). No event may be dropped: each is delivered, or the watch ends with GONE (list again).
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/logger.js";
import type { EtcdClient } from "../../../src/apiserver/storage/etcd/client.js";
import type { EtcdEvent, EtcdWatchResponse } from "../../../src/apiserver/storage/etcd/proto.js";
import { EtcdWatchStream, type WatchTarget } from "../../../src/apiserver/storage/etcd/watch-stream.js";

/** A gRPC watch stream that records what is written to it and answers what the test sends. */
class FakeStream extends EventEmitter {
  readonly written: unknown[] = [];
  write(msg: unknown): boolean {
    this.written.push(msg);
    return true;
  }
  cancel(): void {}
}

function fakeClient(): { client: EtcdClient; stream: FakeStream } {
  const stream = new FakeStream();
  const client = { openWatch: () => ({ stream, url: "http://127.0.0.1:1" }), failedOver: () => undefined } as unknown as EtcdClient;
  return { client, stream };
}

const WATCH_BATCH_MAX_REVS = 1000;
const put = (key: string, revision: number): EtcdEvent => ({
  type: "PUT",
  kv: { key: Buffer.from(key), create_revision: revision, mod_revision: revision, version: 1, value: Buffer.from("{}") },
  prev_kv: null,
});

const response = (watchId: number, revision: number, events: EtcdEvent[] = [], created = false): EtcdWatchResponse => ({
  header: { revision },
  watch_id: watchId,
  created,
  canceled: false,
  compact_revision: 0,
  cancel_reason: "",
  events,
});

/** A watcher of `[key, end)` that records what it is handed. */
function recorder(key: string, end: string, after: number, extra: Partial<WatchTarget> = {}) {
  const seen = { revisions: [] as number[], progress: [] as number[], errors: [] as Error[] };
  const target: WatchTarget = {
    key,
    end,
    after,
    onEvents: (events) => seen.revisions.push(...events.map((e) => e.kv.mod_revision)),
    onProgress: (revision) => seen.progress.push(revision),
    onError: (err) => seen.errors.push(err),
    ...extra,
  };
  return { target, seen };
}

/** Sends responses as one turn of the event loop (the stream handles a turn's responses together), then lets it run. */
async function send(stream: FakeStream, ...responses: EtcdWatchResponse[]): Promise<void> {
  for (const r of responses) stream.emit("data", r);
  await new Promise((resolve) => setImmediate(resolve));
}

/** The ticker as the store runs it: its synced events tick the other watchers. */
function ticker(watches: EtcdWatchStream, after: number) {
  return recorder("", "\u00ff", after, {
    last: true,
    onEvents: (events, synced) => {
      for (const e of events) if (synced) watches.tick(e.kv.mod_revision, e.kv.key.toString("latin1"));
    },
  });
}

/** A stream with a watcher of csr/ (watch id 1) and the ticker (id 2), both from revision 100. */
function setup(options: { reconnectMs?: number } = {}) {
  const { client, stream } = fakeClient();
  const watches = new EtcdWatchStream(client, silentLogger(), { replayQuietMs: 60_000, ...options });
  const csrs = recorder("csr/", "csr0", 100);
  watches.add(csrs.target);
  watches.add(ticker(watches, 100).target);
  return { stream, watches, csrs };
}

/** Both watchers created with nothing to replay, then one write to csr/ at 110 seen by both. */
async function syncedWithOneWrite(stream: FakeStream): Promise<void> {
  await send(stream, response(1, 100, [], true), response(2, 100, [], true));
  await send(stream, response(1, 110, [put("csr/a", 110)]), response(2, 110, [put("csr/a", 110)]));
}

describe("etcd watch stream: etcd's real orders lose no event", () => {
  it("a watcher whose history comes in full batches is not synced until a shorter batch: the ticker's live writes do not skip the rest", async () => {
    const { stream, csrs } = setup();
    // Both created at revision 1,050 with history from 101 to replay.
    await send(stream, response(1, 1050, [], true), response(2, 1050, [], true));
    // The ticker's replay is short (it syncs); the watcher's first batch is full (1,000 revisions: 101–1100), so etcd
    // has more behind it.
    await send(stream, response(2, 1050, [put("b/1", 1040), put("b/2", 1050)]));
    const full = Array.from({ length: WATCH_BATCH_MAX_REVS }, (_, i) => put(`csr/${i}`, 101 + i));
    await send(stream, response(1, 1145, full));
    // A live write elsewhere reaches the synced ticker before the watcher's next batch.
    await send(stream, response(2, 1150, [put("b/3", 1150)]));
    // The rest of the watcher's history: 1101–1140.
    const rest = Array.from({ length: 40 }, (_, i) => put(`csr/r${i}`, 1101 + i));
    await send(stream, response(1, 1150, rest));
    expect(csrs.seen.errors).toEqual([]);
    expect(csrs.seen.revisions).toEqual([...full, ...rest].map((e) => e.kv.mod_revision));
    // Synced after the short batch: now the ticker's progress reaches it.
    await send(stream, response(2, 1160, [put("b/4", 1160)]));
    expect(csrs.seen.progress.at(-1)).toBe(1160);
  });

  it("a replay that keeps arriving in full batches is not assumed complete while it arrives", async () => {
    const { client, stream } = fakeClient();
    const watches = new EtcdWatchStream(client, silentLogger(), { replayQuietMs: 40 });
    const csrs = recorder("csr/", "csr0", 100);
    watches.add(csrs.target);
    // Created at 3,200: 3,100 revisions to replay, in full batches 25 ms apart (etcd's pass is 100 ms; the quiet
    // period here is 40 ms), then a short one.
    await send(stream, response(1, 3200, [], true));
    for (let b = 0; b < 3; b++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      await send(stream, response(1, 3200, Array.from({ length: WATCH_BATCH_MAX_REVS }, (_, i) => put(`csr/${b}-${i}`, 101 + b * WATCH_BATCH_MAX_REVS + i))));
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
    await send(stream, response(1, 3200, Array.from({ length: 100 }, (_, i) => put(`csr/last-${i}`, 3101 + i))));
    expect(csrs.seen.errors).toEqual([]);
    expect(csrs.seen.revisions).toHaveLength(3100);
    expect(csrs.seen.progress).toEqual([3200]);
    watches.close(new Error("done"));
  });

  it("a watcher whose response comes after the ticker's is not reported past its write, and then gets it without a GONE", async () => {
    const { stream, csrs } = setup();
    await syncedWithOneWrite(stream);
    // The ticker sees csr/b at 115 and b/1 at 120 before the watcher's own response for 115 (etcd queued it apart).
    await send(stream, response(2, 115, [put("csr/b", 115)]));
    await send(stream, response(2, 120, [put("b/1", 120)]));
    expect(csrs.seen.progress.at(-1)).toBe(114);
    await send(stream, response(1, 115, [put("csr/b", 115)]));
    expect(csrs.seen.errors).toEqual([]);
    expect(csrs.seen.revisions).toEqual([110, 115]);
    // Delivered: the ticker's progress reaches it again.
    expect(csrs.seen.progress.at(-1)).toBe(120);
  });

  it("an event after progress past it was reported (one the ticker never showed) ends the watch with GONE instead of vanishing", async () => {
    const { stream, csrs } = setup();
    await syncedWithOneWrite(stream);
    // The ticker reports 120 (a write elsewhere) before the watcher's own response for 115 arrives.
    await send(stream, response(2, 120, [put("b/1", 120)]));
    expect(csrs.seen.progress.at(-1)).toBe(120);
    await send(stream, response(1, 115, [put("csr/b", 115)]));
    expect(csrs.seen.revisions).toEqual([110]);
    expect(csrs.seen.errors).toHaveLength(1);
    expect(csrs.seen.errors[0]).toMatchObject({ code: "GONE" });
  });

  it("after a broken stream the watcher resumes from its last own event, not from the ticker's progress", async () => {
    const { stream, watches } = setup({ reconnectMs: 1 });
    await syncedWithOneWrite(stream);
    await send(stream, response(2, 130, [put("b/1", 130)]));
    stream.written.length = 0;
    stream.emit("error", new Error("member gone"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const creates = stream.written.filter((m): m is { create_request: { watch_id: number; start_revision: number } } => typeof m === "object" && m !== null && "create_request" in m);
    expect(creates.find((c) => c.create_request.watch_id === 1)?.create_request.start_revision).toBe(111);
    watches.close(new Error("done"));
  });
});
