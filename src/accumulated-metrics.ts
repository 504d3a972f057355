// Metrics for hot paths: an update adds to plain numbers of its label set, found by a key the caller already has;
// prom-client's registry reads them at scrape in the text its own Counter or Histogram would give.
import type { Registry } from "prom-client";

type Registers = readonly Registry[];

/** A label set as given: an object (copied the first time its key is seen), or what makes it, called only then. */
export type LabelsOf<L> = L | (() => L);

/** The label set `given` names: what it makes, or a copy of it (a caller may reuse its object). */
function takeLabels<L extends object>(given: LabelsOf<L>): L {
  return typeof given === "function" ? (given as () => L)() : { ...given };
}

/** What the registry formats, as prom-client's own metrics hand it over. */
interface Exposition<V> {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly values: V[];
  readonly aggregator: string;
}

/** Adds `metric` to `registry` (prom-client takes any object with its metric interface). */
export function registerIn(registry: Registry, metric: object): void {
  registry.registerMetric(metric as Parameters<Registry["registerMetric"]>[0]);
}

/**
 * prom-client's Counter checks and hashes its labels on every `inc` (~1–2 µs with several labels); here an increment is
 * a Map lookup by a key the caller has. It keeps totals, not increments waiting for a scrape, so any number of
 * registries read the same values. The text is prom-client's Counter's for the same increments, label sets in the order
 * first counted.
 */
export class AccumulatedCounter<L extends object> {
  readonly name: string;
  readonly help: string;
  readonly type = "counter";
  readonly aggregator = "sum";
  readonly #series = new Map<string, { readonly labels: L; value: number }>();

  constructor(o: { readonly name: string; readonly help: string; readonly registers: Registers }) {
    this.name = o.name;
    this.help = o.help;
    for (const registry of o.registers) this.register(registry);
  }

  register(registry: Registry): void {
    registerIn(registry, this);
  }

  /** Adds `value` (default 1; a negative or non-finite one is ignored, as a counter never goes down) to the series `key` names. */
  inc(key: string, labels: LabelsOf<L>, value = 1): void {
    if (!(value >= 0) || value === Infinity) return;
    const series = this.#series.get(key);
    if (series !== undefined) series.value += value;
    else this.#series.set(key, { labels: takeLabels(labels), value });
  }

  /** What the registry formats: a line per label set. */
  get(): Promise<Exposition<{ readonly labels: L; readonly value: number }>> {
    const values = [...this.#series.values()].map(({ labels, value }) => ({ labels, value }));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** Forgets every count (the registry's `resetMetrics`). */
  reset(): void {
    this.#series.clear();
  }
}

/** One label set's buckets (not cumulative: each observation counts in the first bucket that holds it). */
interface Series<L> {
  readonly labels: L;
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** One exposition line as prom-client's registry formats it (`le` first, then the label set). */
interface ValuePair {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly sharedLabels: object;
  readonly value: number;
  readonly metricName: string;
}

/**
 * prom-client's Histogram validates and hashes its labels on every `observe` (~1–2 µs with a request's eight labels),
 * which every request pays; here that is a Map lookup by a key the caller has, and a binary search of the buckets.
 * What the registry reads (`getForPromString`, `get`) is what prom-client's Histogram gives for the same
 * observations: cumulative `_bucket` lines with `le`, then `+Inf`, `_sum` and `_count`.
 */
export class AccumulatedHistogram<L extends object> {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series<L>>();
  readonly #labelNames: readonly (keyof L)[] | undefined;

  /**
   * `labelNames`: the labels a series keeps, when callers hand a wider label set (the request's, for a histogram
   * without its `dry_run`); by default all of them.
   */
  constructor(o: { readonly name: string; readonly help: string; readonly buckets: readonly number[]; readonly registers: Registers; readonly labelNames?: readonly (keyof L)[] }) {
    this.name = o.name;
    this.help = o.help;
    this.#bounds = [...o.buckets].sort((a, b) => a - b);
    this.#labelNames = o.labelNames;
    for (const registry of o.registers) this.register(registry);
  }

  /** Adds it to a registry (one made after its first observations, too). */
  register(registry: Registry): void {
    registerIn(registry, this);
  }

  /** Adds `value` to the label set `key` names (`labels`, or its `labelNames`, taken the first time the key is seen). */
  observe(key: string, labels: LabelsOf<L>, value: number): void {
    if (!Number.isFinite(value)) return;
    let series = this.#series.get(key);
    if (series === undefined) this.#series.set(key, (series = { labels: this.#copy(labels), counts: new Float64Array(this.#bounds.length), sum: 0, count: 0 }));
    const bounds = this.#bounds;
    let lo = 0;
    let hi = bounds.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (bounds[mid]! < value) lo = mid + 1;
      else hi = mid;
    }
    // Above the last bound it counts in +Inf only, which is the total.
    if (lo < bounds.length) series.counts[lo]!++;
    series.sum += value;
    series.count++;
  }

  #copy(given: LabelsOf<L>): L {
    const labels = takeLabels(given);
    if (this.#labelNames === undefined) return labels;
    const kept: Partial<L> = {};
    for (const name of this.#labelNames) kept[name] = labels[name];
    return kept as L;
  }

  /** What the registry formats: per label set its cumulative buckets, `+Inf`, sum and count. */
  getForPromString(): Promise<Exposition<ValuePair>> {
    const bucket = `${this.name}_bucket`;
    const values: ValuePair[] = [];
    for (const { labels, counts, sum, count } of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += counts[i]!;
        values.push({ labels: { le: this.#bounds[i]! }, sharedLabels: labels, value: cumulative, metricName: bucket });
      }
      values.push({ labels: { le: "+Inf" }, sharedLabels: labels, value: count, metricName: bucket });
      values.push({ labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** The same with each line's labels whole (prom-client's `getMetricsAsJSON`). */
  async get(): Promise<{ name: string; help: string; type: string; values: Array<{ labels: object; value: number; metricName: string }>; aggregator: string }> {
    const data = await this.getForPromString();
    return { ...data, values: data.values.map((v) => ({ labels: { ...v.labels, ...v.sharedLabels }, value: v.value, metricName: v.metricName })) };
  }

  /** Forgets every observation (the registry's `resetMetrics`). */
  reset(): void {
    this.#series.clear();
  }
}
