// AccumulatedHistogram against prom-client's Histogram fed the same observations: the same exposition text, fuzzed.
import fc from "fast-check";
import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { AccumulatedHistogram } from "../../src/apiserver/accumulated-histogram.js";

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
