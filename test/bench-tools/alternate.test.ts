// bench:e2e's report read by the alternation tool (test/bench/alternate.ts): the figures of a burst from its real lines,
// and nothing from a run that did not finish.
import { describe, expect, it } from "vitest";
import { parseBurst, runLine } from "../bench/alternate.js";

/** The lines e2e.js printed for a burst (2026-11-27), among others it prints. */
const REPORT = [
  "## burst, no client throttle: 10000 CSRs from 32 clients (platform-ca up, defaults; after 2000 CSRs of warm-up)",
  "last certificate issued after 13.2 s; all work finished (every Event written) after 16.8 s (target \u2264 10 s for 10,000)",
  "CPU per CSR until all work finished: server 1.13 ms, controllers 0.57 ms, other threads 0.28 ms, load generator (clients + watch) 0.42 ms; in all 24.1 s of CPU for 16.8 s on 2 cores",
  "server thread: 11.3 s on a core, 2.2 s runnable, waiting for one; all work finished in 1.49\u00d7 its time on a core, both cores 72% busy",
  "transport peer, same run: the burst's 50000 requests through a bare node server (JSON body parsed, 3 KB answered; 10000 creates over HTTPS, 40000 over its unix-domain socket from a thread of its process) in 3.6 s (CPU: server thread 1.9 s, its other threads 2.7 s, clients here 1.3 s); all work finished in 4.7\u00d7 the peer's time",
].join("\n");

describe("parseBurst", () => {
  it("reads the wall time, the CPU per CSR of each part and the peer's ratio", () => {
    expect(parseBurst(REPORT)).toEqual({ wall: 16.8, server: 1.13, controllers: 0.57, other: 0.28, loadGenerator: 0.42, peerRatio: 4.7 });
  });

  it("gives nothing for a run that stopped before its figures, and NaN for a ratio without its peer", () => {
    expect(parseBurst(REPORT.split("\n").slice(0, 2).join("\n"))).toBeUndefined();
    expect(parseBurst("")).toBeUndefined();
    expect(parseBurst(REPORT.split("\n").filter((l) => !l.startsWith("transport peer")).join("\n"))?.peerRatio).toBeNaN();
  });

  it("names the peer's ratio in a run's line only when the run measured its peer", () => {
    const run = parseBurst(REPORT)!;
    expect(runLine("01:02:03", "A /dir", run)).toBe("01:02:03 A /dir: all work 16.8 s (4.7× the peer) | per CSR: server 1.13, controllers 0.57, other 0.28, load generator 0.42 ms");
    const alone = parseBurst(REPORT.split("\n").filter((l) => !l.startsWith("transport peer")).join("\n"))!;
    expect(runLine("01:02:03", "A /dir", alone)).toBe("01:02:03 A /dir: all work 16.8 s | per CSR: server 1.13, controllers 0.57, other 0.28, load generator 0.42 ms");
  });
});
