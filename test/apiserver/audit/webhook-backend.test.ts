// The audit webhook backend alone: EventList batches by size and by wait, the bounded buffer that drops and counts,
// the throttle, failed deliveries counted, blocking modes, and close() sending what is left.
import { describe, expect, it } from "vitest";
import { AuditWebhookBackend, eventList, MAX_BATCHES_IN_FLIGHT, type AuditBatchSettings, type AuditWebhookMode } from "../../../src/apiserver/audit/webhook-backend.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

const V = "audit.platform.io/v1";
const line = (id: string) => `{"kind":"Event","auditID":"${id}"}\n`;

interface Posted {
  readonly ids: string[];
  resolve(): void;
  reject(err: Error): void;
}

/** A backend whose receiver is the test: each POST waits until the test settles it (or answers at once with `auto`). */
function setup(batch: Partial<AuditBatchSettings>, mode: AuditWebhookMode = "batch", auto = true) {
  const clock = new FakeClock();
  const posted: Posted[] = [];
  const lost: [string, number, string][] = [];
  const backend = new AuditWebhookBackend({
    mode,
    apiVersion: V,
    clock,
    batch: { bufferSize: 100, maxBatchSize: 3, maxBatchWaitMs: 1000, ...batch },
    post: (body) =>
      new Promise<void>((resolve, reject) => {
        const list = JSON.parse(body) as { kind: string; apiVersion: string; items: { auditID: string }[] };
        expect([list.kind, list.apiVersion]).toEqual(["EventList", V]);
        posted.push({ ids: list.items.map((i) => i.auditID), resolve, reject });
        if (auto) resolve();
      }),
  });
  backend.attach((plugin, events, err) => lost.push([plugin, events, (err as Error).message]));
  return { clock, posted, lost, backend };
}

describe("audit webhook backend, batch mode", () => {
  it("sends a full batch at once and a partial one after maxBatchWait, as EventLists", async () => {
    const { clock, posted, backend } = setup({});
    expect(backend.write(line("a") + line("b") + line("c") + line("d"))).toBeUndefined();
    await clock.flush();
    expect(posted.map((p) => p.ids)).toEqual([["a", "b", "c"]]);
    await clock.advance(999);
    expect(posted).toHaveLength(1);
    await clock.advance(1);
    expect(posted.map((p) => p.ids)).toEqual([["a", "b", "c"], ["d"]]);
  });

  it("never blocks: past the buffer, events are dropped and counted under plugin buffered", async () => {
    // The receiver never answers: MAX_BATCHES_IN_FLIGHT batches of 1 are out, then 5 fit in the buffer.
    const { clock, posted, lost, backend } = setup({ bufferSize: 5, maxBatchSize: 1, throttle: undefined }, "batch", false);
    for (let i = 0; i < MAX_BATCHES_IN_FLIGHT + 8; i++) {
      expect(backend.write(line(`e${i}`))).toBeUndefined();
      await clock.flush();
    }
    expect(posted).toHaveLength(MAX_BATCHES_IN_FLIGHT);
    expect(backend.buffered).toBe(5);
    expect(lost).toEqual([["buffered", 1, "audit buffer queue blocked"], ["buffered", 1, "audit buffer queue blocked"], ["buffered", 1, "audit buffer queue blocked"]]);
    // The receiver answers: the buffered events go out, nothing more is lost.
    for (const p of posted) p.resolve();
    await clock.advance(10);
    expect(posted.length).toBe(MAX_BATCHES_IN_FLIGHT + 5);
    expect(backend.buffered).toBe(0);
  });

  it("counts a batch the receiver never took under plugin webhook", async () => {
    const { clock, posted, lost, backend } = setup({}, "batch", false);
    backend.write(line("a") + line("b") + line("c"));
    await clock.flush();
    posted[0]!.reject(new Error("answered 500"));
    await clock.flush();
    expect(lost).toEqual([["webhook", 3, "answered 500"]]);
  });

  it("throttles batches to qps with burst", async () => {
    const { clock, posted, backend } = setup({ maxBatchSize: 1, throttle: { qps: 2, burst: 2 } });
    backend.write(line("a") + line("b") + line("c") + line("d") + line("e"));
    await clock.flush();
    expect(posted).toHaveLength(2);
    await clock.advance(500);
    expect(posted).toHaveLength(3);
    await clock.advance(1000);
    expect(posted).toHaveLength(5);
  });

  it("close() sends what is buffered; events after it are counted as lost", async () => {
    const { posted, lost, backend } = setup({ maxBatchWaitMs: 60_000 });
    backend.write(line("a"));
    await backend.close();
    expect(posted.map((p) => p.ids)).toEqual([["a"]]);
    backend.write(line("late"));
    expect(lost).toEqual([["webhook", 1, "audit backend shut down"]]);
  });
});

describe("audit webhook backend, shutdown with a receiver that does not answer", () => {
  it("close() gives up after its grace period: deliveries are cancelled and every undelivered event counted", async () => {
    const lost: [string, number][] = [];
    const backend = new AuditWebhookBackend({
      mode: "batch",
      apiVersion: V,
      closeGraceMs: 50,
      batch: { bufferSize: 100, maxBatchSize: 2, maxBatchWaitMs: 60_000 },
      // Answers only by failing once the backend cancels the POST.
      post: (_body, signal) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("cancelled")))),
    });
    backend.attach((plugin, events) => lost.push([plugin, events]));
    backend.write(line("a") + line("b") + line("c"));
    const started = performance.now();
    await backend.close();
    expect(performance.now() - started).toBeLessThan(2_000);
    // Both batches (a, b) and (c) were sent, then cancelled.
    expect(lost.reduce((sum, [, n]) => sum + n, 0)).toBe(3);
    expect(lost.every(([plugin]) => plugin === "webhook")).toBe(true);
  });
});

describe("audit webhook backend, blocking modes", () => {
  it("blocking: write waits for the receiver and rejects with its failure; requests are not failed", async () => {
    const { posted, backend } = setup({}, "blocking", false);
    expect(backend.failsRequest).toBe("never");
    let done = false;
    const write = backend.write(line("a") + line("b"))!.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect([posted.map((p) => p.ids), done]).toEqual([[["a", "b"]], false]);
    posted[0]!.resolve();
    await write;
    expect(done).toBe(true);
    const failing = backend.write(line("c"))!;
    posted[1]!.reject(new Error("refused"));
    await expect(failing).rejects.toThrow("refused");
  });

  it("blocking-strict fails requests only at RequestReceived, as upstream", () => {
    expect(setup({}, "blocking-strict").backend.failsRequest).toBe("RequestReceived");
  });

  it("eventList wraps the lines without parsing them", () => {
    expect(eventList(['{"a":1}', '{"b":2}'], V)).toBe(`{"kind":"EventList","apiVersion":"${V}","metadata":{},"items":[{"a":1},{"b":2}]}`);
  });
});
