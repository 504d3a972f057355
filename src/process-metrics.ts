// The process's own Prometheus metrics, for the API server's and the controller manager's /metrics alike.
import { collectDefaultMetrics, Registry } from "prom-client";

let registry: Registry | undefined;

/**
 * The process under the names Prometheus' process collector gives upstream's servers and controller managers
 * (`process_resident_memory_bytes`, `process_cpu_seconds_total`, `process_start_time_seconds`, `process_open_fds`…),
 * with the runtime's `nodejs_*` where a Go program has `go_*` (the heap and the event loop are this thread's). One
 * collector per thread, made at the first call: its event-loop monitor and GC observer are never stopped, so each
 * server or manager a process runs must not add its own.
 */
export function processRegistry(): Registry {
  if (!registry) {
    registry = new Registry();
    // The event-loop delay sampled every 100 ms rather than prom-client's 10: each sample wakes the thread, and at 10 ms
    // an idle thread spent ~7 ms of CPU a second on them here (~2 ms at 100).
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  }
  return registry;
}

/** `own`'s exposition text followed by the process's. */
export async function withProcessMetrics(own: Registry): Promise<string> {
  const [a, b] = await Promise.all([own.metrics(), processRegistry().metrics()]);
  return a + b;
}
