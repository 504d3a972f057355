import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import type { Event, EventType } from "../../src/api/types/event.js";
import { FakeClock } from "../../src/controller/clock.js";
import { EventRecorder, truncateBytes, type EventRecorderOptions } from "../../src/controller/event-recorder.js";
import { FakeStore } from "./fake-store.js";

const T0 = Date.UTC(2025, 0, 1);

function csr(name: string, uid = `uid-${name}`): ApiObject {
  return { apiVersion: "certificates.platform.io/v1", kind: "CertificateSigningRequest", metadata: { name, uid, resourceVersion: "7" } };
}

function setup(options: Partial<EventRecorderOptions> = {}) {
  const clock = new FakeClock(T0);
  const store = new FakeStore<Event>({ kind: "Event" });
  const client = store.client();
  const recorder = new EventRecorder({ client, reportingController: "csr-signing", reportingInstance: "replica-1", clock, ...options });
  const events = (): Event[] => [...store.objects.values()];
  return { clock, store, client, recorder, events };
}

describe("EventRecorder", () => {
  it("writes an events/v1 Event about a cluster-scoped object into the default namespace", async () => {
    const { recorder, events } = setup();
    recorder.event(csr("node-1"), "Normal", "Issued", "Sign", "certificate issued by platform.io/nodeagent-serving");
    await recorder.flush();
    const [ev] = events();
    expect(ev).toMatchObject({
      apiVersion: "events.platform.io/v1",
      kind: "Event",
      metadata: { name: `node-1.${(BigInt(T0) * 1_000_000n).toString(16)}`, namespace: "default" },
      eventTime: "2025-01-01T00:00:00.000000Z",
      type: "Normal",
      reason: "Issued",
      action: "Sign",
      note: "certificate issued by platform.io/nodeagent-serving",
      regarding: { apiVersion: "certificates.platform.io/v1", kind: "CertificateSigningRequest", name: "node-1", uid: "uid-node-1", resourceVersion: "7" },
      reportingController: "csr-signing",
      reportingInstance: "replica-1",
    });
    expect(ev!.series).toBeUndefined();
  });

  it("puts an event about a namespaced object in that namespace and carries the related object", async () => {
    const { recorder, events } = setup();
    recorder.event({ kind: "Lease", namespace: "platform-system", name: "lock" }, "Warning", "LeaderLost", "Renew", "lost", { kind: "Pod", namespace: "platform-system", name: "p" });
    await recorder.flush();
    expect(events()[0]).toMatchObject({ metadata: { namespace: "platform-system" }, related: { kind: "Pod", name: "p" } });
  });

  it("speaks the configured group suffix", async () => {
    const { recorder, events } = setup({ groupSuffix: "k8s.io" });
    recorder.event(csr("a"), "Normal", "R", "A", "n");
    await recorder.flush();
    expect(events()[0]!.apiVersion).toBe("events.k8s.io/v1");
  });

  it("folds repeats within the window into one Event's series and starts a new Event after the window", async () => {
    const { recorder, events, clock, client } = setup();
    const emit = (): void => recorder.event(csr("a"), "Warning", "SignFailed", "Sign", "CA not ready");
    emit();
    await recorder.flush();
    for (const step of [60_000, 120_000]) {
      await clock.advance(step);
      emit();
      await recorder.flush();
    }
    expect(events()).toHaveLength(1);
    expect(events()[0]!.series).toEqual({ count: 3, lastObservedTime: "2025-01-01T00:03:00.000000Z" });
    expect(events()[0]!.eventTime).toBe("2025-01-01T00:00:00.000000Z");
    expect(client.count("patch")).toBe(2);
    await clock.advance(6 * 60_000 + 1);
    emit();
    await recorder.flush();
    expect(events()).toHaveLength(2);
    expect(events()[1]!.series).toBeUndefined();
  });

  it.each([
    ["note", ["Warning", "SignFailed", "Sign", "other note"]],
    ["reason", ["Warning", "Other", "Sign", "CA not ready"]],
    ["type", ["Normal", "SignFailed", "Sign", "CA not ready"]],
    ["action", ["Warning", "SignFailed", "Retry", "CA not ready"]],
  ] as const)("keeps events apart when the %s differs", async (_field, [type, reason, action, note]) => {
    const { recorder, events } = setup();
    recorder.event(csr("a"), "Warning", "SignFailed", "Sign", "CA not ready");
    recorder.event(csr("a"), type as EventType, reason, action, note);
    await recorder.flush();
    expect(events()).toHaveLength(2);
    expect(new Set(events().map((e) => e.metadata.name)).size).toBe(2);
  });

  it("coalesces repeats that arrive while a write is in flight", async () => {
    const { recorder, events, client } = setup();
    for (let i = 0; i < 10; i++) recorder.event(csr("a"), "Normal", "Issued", "Sign", "same");
    await recorder.flush();
    expect(events()[0]!.series?.count).toBe(10);
    expect(client.count("create") + client.count("patch")).toBeLessThanOrEqual(2);
  });

  it("cuts reason and action to 128 characters and the note to 1 KiB on a character boundary", async () => {
    const { recorder, events } = setup();
    recorder.event(csr("a"), "Normal", "R".repeat(300), "A".repeat(129), "é".repeat(1000));
    await recorder.flush();
    const ev = events()[0]!;
    expect([ev.reason!.length, ev.action!.length]).toEqual([128, 128]);
    expect(Buffer.byteLength(ev.note!)).toBe(1024);
    expect(ev.note).toBe("é".repeat(512));
  });

  it("never throws or waits on a failing server, and recovers when it is back", async () => {
    const { recorder, events, client } = setup();
    client.down = true;
    expect(() => recorder.event(csr("a"), "Normal", "Issued", "Sign", "x")).not.toThrow();
    await recorder.flush();
    expect(events()).toHaveLength(0);
    client.down = false;
    recorder.event(csr("a"), "Normal", "Issued", "Sign", "x");
    await recorder.flush();
    expect(events()[0]!.series?.count).toBe(2);
  });

  it("writes the series as a new Event when the old one was deleted", async () => {
    const { recorder, events, store } = setup();
    recorder.event(csr("a"), "Normal", "Issued", "Sign", "x");
    await recorder.flush();
    store.remove(`default/${events()[0]!.metadata.name}`);
    recorder.event(csr("a"), "Normal", "Issued", "Sign", "x");
    await recorder.flush();
    expect(events()).toHaveLength(1);
    expect(events()[0]!.series?.count).toBe(2);
  });

  it.each([
    ["an empty reason", ["Normal", "", "Sign"]],
    ["an empty action", ["Normal", "Issued", ""]],
    ["an unknown type", ["Info", "Issued", "Sign"]],
  ])("drops an event with %s without throwing", async (_name, [type, reason, action]) => {
    const { recorder, events } = setup();
    recorder.event(csr("a"), type as EventType, reason!, action!, "n");
    await recorder.flush();
    expect(events()).toHaveLength(0);
  });

  it("limits each object to its burst, then one event per refill period, without touching other objects", async () => {
    const { recorder, events, clock } = setup({ rateLimit: { burst: 25, qps: 1 / 300 } });
    for (let i = 0; i < 30; i++) recorder.event(csr("noisy"), "Normal", "Step", "Sign", `step ${i}`);
    recorder.event(csr("quiet"), "Normal", "Step", "Sign", "one");
    await recorder.flush();
    const count = (name: string): number => events().filter((e) => e.regarding?.name === name).length;
    expect([count("noisy"), count("quiet")]).toEqual([25, 1]);
    await clock.advance(300_000);
    recorder.event(csr("noisy"), "Normal", "Step", "Sign", "later 1");
    recorder.event(csr("noisy"), "Normal", "Step", "Sign", "later 2");
    await recorder.flush();
    expect(count("noisy")).toBe(26);
  });

  it("forgets the least recently used series past cacheSize", async () => {
    const { recorder, events } = setup({ cacheSize: 2 });
    for (const name of ["a", "b", "c", "a"]) recorder.event(csr(name), "Normal", "R", "A", "n");
    await recorder.flush();
    expect(events().filter((e) => e.regarding?.name === "a")).toHaveLength(2);
  });

  it.each([
    [{ reportingController: "" }, "reportingController"],
    [{ reportingInstance: "x".repeat(129) }, "reportingInstance"],
    [{ seriesWindowMs: 0 }, "seriesWindowMs"],
    [{ cacheSize: 0 }, "cacheSize"],
    [{ rateLimit: { burst: 0, qps: 1 } }, "rateLimit"],
  ])("refuses option %j", (bad, name) => {
    expect(() => setup(bad)).toThrow(new RegExp(`\`${name}\``));
  });
});

describe("truncateBytes", () => {
  it.each([
    ["ascii", "abcdef", 4, "abcd"],
    ["short text", "abc", 10, "abc"],
    ["a 4-byte character at the cut", "ab😀", 5, "ab"],
    ["a 3-byte character ending at the cut", "a€", 4, "a€"],
  ])("cuts %s without splitting a character", (_name, text, max, expected) => {
    expect(truncateBytes(text, max)).toBe(expected);
  });
});

describe("event names", () => {
  it.each([
    ["example.com:foo:abc123", "example.com-foo-abc123"],
    ["Node-CSR-1", "node-csr-1"],
    ["--x--", "x"],
    [":::", "object"],
    ["a".repeat(300), "a".repeat(230)],
  ])("turns %j into the valid prefix %j", async (name, prefix) => {
    const { eventNamePrefix } = await import("../../src/controller/event-recorder.js");
    expect(eventNamePrefix(name)).toBe(prefix);
  });
});
