// What the benchmarks read about processes (/proc) and how they drive a timed, concurrent request loop.
import { readFileSync } from "node:fs";

/** CPU seconds (user + system) a process has used, from /proc; NaN when it cannot be read. */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** A memory figure of a process in MiB from /proc/PID/status (VmRSS: now, VmHWM: peak); NaN when it cannot be read. */
export function memoryMiB(pid: number | undefined, field: "VmRSS" | "VmHWM"): number {
  if (pid === undefined) return NaN;
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? NaN : Number(kb) / 1024;
  } catch {
    return NaN;
  }
}

export interface LoopResult {
  readonly requests: number;
  readonly seconds: number;
  /** CPU (user + system) of this process per request, in µs. */
  readonly clientMicros: number;
}

/**
 * `concurrency` callers repeat `once` for `seconds`, after one warm-up round (connections opened before the clock
 * starts); `beforeClock` runs between the two (to reset counters of the warm-up).
 */
export async function timedLoop(concurrency: number, seconds: number, once: () => Promise<unknown>, beforeClock?: () => void): Promise<LoopResult> {
  await Promise.all(Array.from({ length: concurrency }, once));
  beforeClock?.();
  let requests = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const until = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await once();
        requests++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { requests, seconds: (performance.now() - start) / 1000, clientMicros: (used.user + used.system) / requests };
}

/** The nearest-rank `p`th percentile of `values` (NaN when empty). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}
