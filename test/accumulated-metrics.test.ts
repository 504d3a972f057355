// AccumulatedCounter and AccumulatedHistogram against prom-client's Counter and Histogram fed the same updates: the
// same exposition text, fuzzed.
import fc from "fast-check";
import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { AccumulatedCounter, AccumulatedHistogram } from "../src/accumulated-metrics.js";

const BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 1, 5];
type Labels = { readonly verb: string; readonly resource: string };

/** Both histograms, each in a registry of its own, under the same name and help. */
function pair(): { ours: AccumulatedHistogram<Labels>; theirs: Histogram<"verb" | "resource">; text(): Promise<[string, string]> } {
  const a = new Registry();
  const b = new Registry();
  const help = "Request latency.";
  const ours = new AccumulatedHistogram<Labels>({ name: "latency_seconds", help, buckets: BUCKETS, registers: [a] });
  const theirs = new Histogram({ name: "latency_seconds", help, labelNames: ["verb", "resource"], buckets: BUCKETS, registers: [b] });
  return { ours, theirs, text: async () => [await a.metrics(), await b.metrics()] };
}

const observe = (p: ReturnType<typeof pair>, labels: Labels, value: number): void => {
  p.ours.observe(`${labels.verb}|${labels.resource}`, labels, value);
  p.theirs.observe(labels, value);
};

describe("AccumulatedHistogram", () => {
  it("exposes what prom-client's Histogram exposes: cumulative buckets, a bound counted as its own, +Inf, sum and count", async () => {
    const p = pair();
    const get = { verb: "GET", resource: "pods" };
    const put = { verb: "PUT", resource: 'say "hi"\\\n' };
    for (const v of [0, 0.005, 0.0051, 0.3, 0.4, 7, 1e9]) observe(p, get, v);
    observe(p, put, 0.025);
    const [ours, theirs] = await p.text();
    expect(ours).toBe(theirs);
    expect(ours).toContain('latency_seconds_bucket{le="0.005",verb="GET",resource="pods"} 2');
    expect(ours).toContain('latency_seconds_bucket{le="0.4",verb="GET",resource="pods"} 5');
    expect(ours).toContain('latency_seconds_bucket{le="+Inf",verb="GET",resource="pods"} 7');
    expect(ours).toContain('latency_seconds_count{verb="PUT",resource="say \\"hi\\"\\\\\\n"} 1');
  });

  it("matches prom-client for any observations (fuzzed)", async () => {
    const labels = fc.record({ verb: fc.constantFrom("GET", "LIST", "POST"), resource: fc.string({ maxLength: 6 }) });
    const value = fc.oneof(fc.constantFrom(...BUCKETS), fc.double({ min: 0, max: 100, noNaN: true }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(labels, value), { maxLength: 40 }), async (observations) => {
        const p = pair();
        for (const [l, v] of observations) observe(p, l, v);
        const [ours, theirs] = await p.text();
        expect(ours).toBe(theirs);
      }),
      { numRuns: 200 },
    );
  });

  it("ignores a value that is not a finite number, forgets everything on reset, and reads as JSON with whole labels", async () => {
    const p = pair();
    p.ours.observe("x", { verb: "GET", resource: "a" }, Number.NaN);
    expect((await p.ours.get()).values).toEqual([]);
    p.ours.observe("x", { verb: "GET", resource: "a" }, 0.3);
    const json = await p.ours.get();
    expect(json.values.find((v) => v.metricName === "latency_seconds_sum")).toEqual({ labels: { verb: "GET", resource: "a" }, value: 0.3, metricName: "latency_seconds_sum" });
    expect(json.values.find((v) => v.metricName === "latency_seconds_bucket")?.labels).toEqual({ le: 0.005, verb: "GET", resource: "a" });
    p.ours.reset();
    expect((await p.ours.get()).values).toEqual([]);
  });
});

describe("AccumulatedCounter", () => {
  const help = "Requests.";
  const key = (l: Labels): string => `${l.verb}|${l.resource}`;

  it("matches prom-client's Counter for any increments (fuzzed), label sets in the order first counted", async () => {
    const labels = fc.record({ verb: fc.constantFrom("GET", "LIST", "POST"), resource: fc.string({ maxLength: 6 }) });
    const amount = fc.oneof(fc.constant(1), fc.constant(0), fc.double({ min: 0, max: 1e6, noNaN: true }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(labels, amount), { maxLength: 40 }), async (increments) => {
        const a = new Registry();
        const b = new Registry();
        const ours = new AccumulatedCounter<Labels>({ name: "requests_total", help, registers: [a] });
        const theirs = new Counter({ name: "requests_total", help, labelNames: ["verb", "resource"], registers: [b] });
        for (const [l, v] of increments) {
          ours.inc(key(l), l, v);
          theirs.inc(l, v);
        }
        expect(await a.metrics()).toBe(await b.metrics());
      }),
      { numRuns: 200 },
    );
  });

  it("keeps totals that every registry reads, takes a label set once, and ignores what would lower it", async () => {
    const a = new Registry();
    const b = new Registry();
    const c = new AccumulatedCounter<Labels>({ name: "requests_total", help, registers: [a, b] });
    let made = 0;
    const labels = { verb: "GET", resource: "pods" };
    c.inc("k", () => (made++, labels));
    c.inc("k", () => (made++, labels), 2);
    const given = { verb: "PUT", resource: "csrs" };
    c.inc("p", given);
    given.resource = "changed";
    for (const bad of [-1, Number.NaN, Infinity]) c.inc("k", labels, bad);
    expect(made).toBe(1);
    const first = await a.metrics();
    expect(first).toContain('requests_total{verb="GET",resource="pods"} 3');
    expect(first).toContain('requests_total{verb="PUT",resource="csrs"} 1');
    // A scrape takes nothing away: the other registry, and the same one again, read the same totals.
    expect(await b.metrics()).toBe(first);
    expect(await a.metrics()).toBe(first);
    a.resetMetrics();
    expect(await b.metrics()).not.toContain("requests_total{");
  });
});
