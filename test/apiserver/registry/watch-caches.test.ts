// The registry's view of a watch cache: watchers get the stored text without a decode; the object only when asked for.
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/logger.js";
import type { ResourceStore } from "../../../src/apiserver/registry/generic.js";
import { serializeForStorage } from "../../../src/apiserver/registry/stored.js";
import type { ApiWatchEvent } from "../../../src/apiserver/registry/watch.js";
import { WatchCaches } from "../../../src/apiserver/registry/watch-caches.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { systemClock } from "../../../src/time/clock.js";

const PREFIX = "/example.io/things/";
// Only what WatchCaches reads of a store.
const store = { def: { kind: "Thing", createOnly: false }, collectionPrefix: PREFIX, apiVersion: "example.io/v1" } as unknown as ResourceStore;
const thing = (name: string, spec: unknown) => serializeForStorage({ apiVersion: "example.io/v1", kind: "Thing", metadata: { name }, spec } as never);

let caches: WatchCaches | undefined;
afterEach(() => caches?.stop());

async function take(events: AsyncGenerator<ApiWatchEvent>, n: number): Promise<ApiWatchEvent[]> {
  const out: ApiWatchEvent[] = [];
  while (out.length < n) out.push((await events.next()).value as ApiWatchEvent);
  return out;
}

describe("WatchCaches", () => {
  it("hands watchers the stored text with its resourceVersion and decodes only for a watcher that reads the object", async () => {
    let decodes = 0;
    const storage = new MemoryStorage({ retention: { revisions: 1000 } });
    caches = new WatchCaches(storage, systemClock, silentLogger(), { decode: (text) => (decodes++, JSON.parse(text)) });
    const before = await storage.create(`${PREFIX}before`, thing("before", {}));
    const cached = caches.for(store)!;
    await cached.waitUntilFresh(before.modRevision);
    const abort = new AbortController();
    const watches = [1, 2, 3].map(() => cached.watch({ prefix: PREFIX, fromRevision: before.modRevision, sendInitialEvents: false, allowBookmarks: false, filter: undefined, signal: abort.signal }) as AsyncGenerator<ApiWatchEvent>);
    const firsts = watches.map((w) => w.next());
    const created = await storage.create(`${PREFIX}a`, thing("a", { size: 1 }));
    const updated = await storage.update(`${PREFIX}a`, thing("a", { size: 2 }));
    const seen = await Promise.all(watches.map(async (w, i) => [(await firsts[i]!).value as ApiWatchEvent, ...(await take(w, 1))]));
    for (const [added, modified] of seen) {
      expect(added!.type).toBe("ADDED");
      expect(JSON.parse(added!.json!())).toEqual({ apiVersion: "example.io/v1", kind: "Thing", metadata: { name: "a", resourceVersion: String(created.modRevision) }, spec: { size: 1 } });
      expect(JSON.parse(modified!.json!()).metadata.resourceVersion).toBe(String(updated.modRevision));
    }
    // Three watchers, two events each: the text went out as stored, nothing was decoded.
    expect(decodes).toBe(0);
    // A watcher that converts reads the object: decoded once, shared, and copied before resourceVersion is set.
    const object = seen[0]![1]!.object as unknown as { metadata: { resourceVersion: string }; spec: unknown };
    expect(object).toMatchObject({ metadata: { name: "a", resourceVersion: String(updated.modRevision) }, spec: { size: 2 } });
    expect(decodes).toBe(1);
    expect((seen[1]![1]!.object as unknown as { spec: unknown }).spec).toEqual({ size: 2 });
    expect(decodes).toBe(1);
    abort.abort();
    for (const w of watches) await w.return(undefined);
  });
});
