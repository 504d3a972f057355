// The one followed configuration file: new content applied once, refusals said once until the file changes, checks
// one at a time, the folder watch seeing an edit without the poll, and nothing after stop.
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { contentDigest, watchConfigFile, type FileRefusal } from "../../src/config/watched-file.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";

function follow(text: string, o: { watchFolder?: boolean; apply?: (t: string) => Promise<void> | void } = {}) {
  const path = join(tempDir(), "config.yaml");
  writeFileSync(path, text);
  const applied: string[] = [];
  const refused: FileRefusal[] = [];
  const clock = new FakeClock();
  const file = watchConfigFile({
    path,
    initialDigest: contentDigest(text),
    pollMs: 1000,
    clock,
    watchFolder: o.watchFolder ?? false,
    apply: o.apply ?? ((t) => void applied.push(t)),
    refused: (r) => void refused.push(r),
  });
  return { path, applied, refused, clock, file };
}

describe("a followed configuration file", () => {
  it("applies a new content once, and says a refused content or an unreadable file once until it changes", async () => {
    const f = follow("a");
    expect(await f.file.check()).toBe(false);
    writeFileSync(f.path, "b");
    expect(await f.file.check()).toBe(true);
    expect(await f.file.check()).toBe(false);
    expect(f.applied).toEqual(["b"]);
    rmSync(f.path);
    for (let i = 0; i < 3; i++) expect(await f.file.check()).toBe(false);
    expect(f.refused).toEqual([{ reason: "cannot read it: ENOENT", unreadable: true, code: "ENOENT" }]);
    // The content that was in use before the file went missing is not new: nothing to apply.
    writeFileSync(f.path, "b");
    expect(await f.file.check()).toBe(false);
    expect(f.applied).toEqual(["b"]);
    // Missing again, then back with another content: said once more, and that content is applied.
    rmSync(f.path);
    expect(await f.file.check()).toBe(false);
    writeFileSync(f.path, "c");
    expect(await f.file.check()).toBe(true);
    expect(f.refused).toHaveLength(2);
    expect(f.applied).toEqual(["b", "c"]);
    f.file.stop();
  });

  it("keeps the running content when apply refuses the new one, and says why once", async () => {
    const f = follow("good", { apply: (t) => { if (t.startsWith("bad")) throw new Error(`refused ${t}`); } });
    writeFileSync(f.path, "bad 1");
    expect(await f.file.check()).toBe(false);
    expect(await f.file.check()).toBe(false);
    writeFileSync(f.path, "bad 2");
    await f.file.check();
    expect(f.refused).toEqual([{ reason: "refused bad 1", unreadable: false }, { reason: "refused bad 2", unreadable: false }]);
    writeFileSync(f.path, "good 2");
    expect(await f.file.check()).toBe(true);
    f.file.stop();
  });

  it("checks one at a time: a burst of checks applies a change once", async () => {
    let running = 0;
    let most = 0;
    const f = follow("a", { apply: async () => { most = Math.max(most, ++running); await new Promise((r) => setTimeout(r, 20)); running--; } });
    writeFileSync(f.path, "b");
    const results = await Promise.all([f.file.check(), f.file.check(), f.file.check()]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(most).toBe(1);
    f.file.stop();
  });

  it("polls on the clock, sees an edit through the folder watch without it, and stops both", async () => {
    const polled = follow("a");
    writeFileSync(polled.path, "b");
    await polled.clock.advance(1000);
    await until(() => polled.applied.length === 1, "the poll to apply the edit");
    polled.file.stop();
    writeFileSync(polled.path, "c");
    await polled.clock.advance(5000);
    expect(polled.applied).toEqual(["b"]);

    const watched = follow("a", { watchFolder: true });
    // Replaced by rename, as editors and ConfigMaps do: the clock never moves, so only the watch can see it.
    writeFileSync(`${watched.path}.tmp`, "b");
    renameSync(`${watched.path}.tmp`, watched.path);
    await until(() => watched.applied.length === 1, "the folder watch to apply the edit");
    expect(watched.applied).toEqual(["b"]);
    watched.file.stop();
  });
});
