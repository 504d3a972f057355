// The token cache's view of storage: writes and deletes of ServiceAccounts, Secrets and Pods are told as they commit,
// other collections are not, and a failed watch forgets every token and starts again.
import { describe, expect, it } from "vitest";
import { followTokenObjects } from "../../../src/apiserver/auth/token-objects.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import type { Storage, Watch } from "../../../src/apiserver/storage/types.js";
import { silentLogger } from "../../../src/logger.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

/** A new watch replays what it missed on the next turn and is live from then on. */
const live = () => new Promise((resolve) => setImmediate(resolve));

function listener() {
  const told: string[] = [];
  return { told, objectChanged: (o: string) => void told.push(o), forgetTokens: () => void told.push("*") };
}

describe("followTokenObjects", () => {
  it("tells every write and delete of the three collections by the time the write resolves, and nothing else", async () => {
    const storage = new MemoryStorage();
    const l = listener();
    const stop = followTokenObjects(storage, l, new FakeClock(), silentLogger());
    await live();
    await storage.create("/core/secrets/kube-system/bootstrap-token-abcdef", "{}");
    expect(l.told).toEqual(["secrets/kube-system/bootstrap-token-abcdef"]);
    const sa = await storage.create("/core/serviceaccounts/team/builder", "{}");
    await storage.create("/core/pods/team/web-0", "{}");
    await storage.create("/core/configmaps/team/settings", "{}");
    await storage.create("/core/secretsx/team/s", "{}");
    await storage.delete("/core/serviceaccounts/team/builder", sa.modRevision);
    expect(l.told).toEqual(["secrets/kube-system/bootstrap-token-abcdef", "serviceaccounts/team/builder", "pods/team/web-0", "serviceaccounts/team/builder"]);
    stop();
    await storage.create("/core/secrets/team/after", "{}");
    expect(l.told).toHaveLength(4);
  });

  it("forgets every token when a watch fails and follows the collection again a second later", async () => {
    const memory = new MemoryStorage();
    const failures: Array<(err: Error) => void> = [];
    const watches: Watch[] = [];
    const storage = {
      watch: (prefix, options, onEvent, onError) => {
        failures.push(onError!);
        const w = memory.watch(prefix, options, onEvent);
        watches.push(w);
        return w;
      },
    } as Pick<Storage, "watch"> as Storage;
    const clock = new FakeClock();
    const l = listener();
    const stop = followTokenObjects(storage, l, clock, silentLogger());
    await live();
    expect(failures).toHaveLength(3);
    watches[1]!.cancel();
    failures[1]!(new Error("connection lost"));
    expect(l.told).toEqual(["*"]);
    await memory.create("/core/secrets/team/s", "{}");
    expect(l.told).toEqual(["*"]);
    await clock.advance(1000);
    expect(failures).toHaveLength(4);
    await live();
    await memory.create("/core/secrets/team/t", "{}");
    expect(l.told).toEqual(["*", "secrets/team/t"]);
    // Stopped while a retry waits: no watch starts again.
    failures[3]!(new Error("connection lost"));
    stop();
    await clock.advance(1000);
    expect(failures).toHaveLength(4);
  });
});
