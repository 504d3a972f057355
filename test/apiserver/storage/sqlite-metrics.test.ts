// The SQLite store's size on /metrics: the open stores' databases, no sample while none is open (a server on etcd).
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { sqliteMetrics } from "../../../src/apiserver/storage/sqlite-metrics.js";
import { metricValue } from "../../fixtures/metrics-text.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const dir = tempDir("pca-size-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** platform_ca_storage_size_bytes as a scrape reads it; undefined when it has no sample. */
async function size(): Promise<number | undefined> {
  const registry = new Registry();
  sqliteMetrics.register(registry);
  const text = await registry.metrics();
  expect(text).toContain("# TYPE platform_ca_storage_size_bytes gauge");
  return metricValue(text, "platform_ca_storage_size_bytes");
}

describe("platform_ca_storage_size_bytes", () => {
  it("reports the open stores' database size, which grows with what they hold, and nothing once they are closed", async () => {
    expect(await size()).toBeUndefined();
    const a = await openSqliteStorage({ path: join(dir, "a", "store.db") });
    const b = await openSqliteStorage({ path: join(dir, "b", "store.db") });
    const empty = a.sizeBytes()!;
    expect(empty).toBeGreaterThan(0);
    expect(await size()).toBe(empty + b.sizeBytes()!);
    for (let i = 0; i < 5; i++) await Promise.all(Array.from({ length: 100 }, (_, j) => a.create(`/size/${i}-${j}`, JSON.stringify({ pad: "p".repeat(2000) }))));
    const full = a.sizeBytes()!;
    // 500 values of 2 KB: at least a megabyte more, whether or not a checkpoint copied them into the file yet.
    expect(full - empty).toBeGreaterThan(1_000_000);
    expect(await size()).toBe(full + b.sizeBytes()!);
    await a.close();
    expect(a.sizeBytes()).toBeUndefined();
    expect(await size()).toBe(b.sizeBytes());
    await b.close();
    expect(await size()).toBeUndefined();
  });
});
