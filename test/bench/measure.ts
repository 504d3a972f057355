// What the benchmarks read about processes (/proc) and the host, and how they drive a timed, concurrent request loop.
import type { ChildProcess } from "node:child_process";
import { closeSync, fstatSync, openSync, readdirSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

/** A numeric setting of a benchmark from the environment (`BENCH_*`), or its default. */
export const envNumber = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

/**
 * What the host charges for the kernel's work, in µs, measured in this process: one system call as node makes it
 * (`fstatSync` of an open file) and the first touch of a fresh 4 KiB page (the fault and the page's zeroing). On a
 * shared virtual machine both move with the host, and far more than arithmetic does: printed beside each run, they say
 * which host a figure came from.
 */
export function hostCosts(): { readonly syscallUs: number; readonly pageTouchUs: number } {
  const fd = openSync("/proc/self/stat", "r");
  const calls = 20_000;
  let t = performance.now();
  for (let i = 0; i < calls; i++) fstatSync(fd);
  const syscallUs = ((performance.now() - t) * 1000) / calls;
  closeSync(fd);
  // Large enough that malloc maps it fresh from the kernel, untouched until the loop writes a byte into each page.
  const pages = 8192;
  const fresh = Buffer.allocUnsafeSlow(pages * 4096);
  t = performance.now();
  for (let i = 0; i < fresh.length; i += 4096) fresh[i] = 1;
  return { syscallUs, pageTouchUs: ((performance.now() - t) * 1000) / pages };
}

/** "host: a system call 1.2 µs, …": hostCosts() as a line of a benchmark's header. */
export function describeHost(): string {
  const { syscallUs, pageTouchUs } = hostCosts();
  return `host: a system call (node's fstatSync) ${syscallUs.toFixed(2)} µs, the first touch of a fresh 4 KiB page ${pageTouchUs.toFixed(1)} µs`;
}

/** CPU seconds (user + system) a process has used, from /proc; NaN when it cannot be read. */
export function cpuSeconds(pid: number | undefined): number {
  return pid === undefined ? NaN : statCpuSeconds(`/proc/${pid}/stat`);
}

/** utime + stime of a /proc `stat` file (a process's or a thread's) in seconds; NaN when it cannot be read. */
function statCpuSeconds(file: string): number {
  try {
    const fields = readFileSync(file, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds per thread of a process, keyed "main" for the main thread and "TID name" for the others
 * (/proc/PID/task/TID); empty when unreadable.
 */
export function threadCpu(pid: number | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (pid === undefined) return out;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const name = tid === String(pid) ? "main" : `${tid} ${readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim()}`;
      out.set(name, statCpuSeconds(`/proc/${pid}/task/${tid}/stat`));
    }
  } catch {
    // the process or a thread went away
  }
  return out;
}

/**
 * Seconds a process's main thread has spent runnable but not running (waiting for a core: the second field of
 * /proc/PID/schedstat, in ns); NaN when it cannot be read (no schedstats in this kernel, or the process is gone).
 */
export function mainThreadWaitSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e9;
  } catch {
    return NaN;
  }
}

/** "process 12.3 s (main 6.1, 1234 node 4.0, …)" of what each thread used between two threadCpu readings. */
export function describeThreadCpu(before: Map<string, number>, after: Map<string, number>): string {
  const used = [...after].map(([name, s]) => [name, s - (before.get(name) ?? 0)] as const).filter(([, s]) => s >= 0.05).sort((a, b) => b[1] - a[1]);
  const total = used.reduce((sum, [, s]) => sum + s, 0);
  return `process ${total.toFixed(1)} s (${used.map(([name, s]) => `${name} ${s.toFixed(1)}`).join(", ")})`;
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

/**
 * A peer server spawned with its stdout piped: the port of its first line (`listening on PORT`), and the rest of its
 * lines for whoever talks with it afterwards.
 */
export async function listeningPort(child: ChildProcess): Promise<{ readonly port: number; readonly lines: AsyncIterator<string> }> {
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const port = Number(/listening on (\d+)/.exec(String((await lines.next()).value))?.[1]);
  return { port, lines };
}
