// --profile cpu|heap: V8's CPU profile (.cpuprofile JSON) or sampling heap profile (.heapprofile JSON) of one command run.
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { invalidOption, PlatformError } from "../../errors.js";

export type ProfileKind = "none" | "cpu" | "heap";

/** Go runtime profiles kubectl offers that have no Node.js counterpart. */
const GO_ONLY = ["goroutine", "threadcreate", "block", "mutex"];

export function parseProfileKind(value: string | undefined): ProfileKind {
  const v = value ?? "none";
  if (v === "none" || v === "cpu" || v === "heap") return v;
  if (GO_ONLY.includes(v)) {
    throw invalidOption("--profile", `to be none, cpu or heap (the ${v} profile belongs to Go programs; platformctl runs on Node.js)`, v);
  }
  throw invalidOption("--profile", "to be one of none, cpu, heap", v);
}

export interface RunningProfile {
  /** Stops profiling and writes the profile JSON to the output file. */
  stop(): Promise<void>;
}

/** Starts a profile of this process; `none` returns a no-op. */
export async function startProfile(kind: ProfileKind, output: string): Promise<RunningProfile> {
  if (kind === "none") return { stop: async () => undefined };
  const session = new Session();
  session.connect();
  if (kind === "cpu") {
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  } else {
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", { samplingInterval: 32_768 });
  }
  return {
    async stop() {
      try {
        const result = kind === "cpu" ? await session.post("Profiler.stop") : await session.post("HeapProfiler.stopSampling");
        await writeFile(output, JSON.stringify(result.profile));
      } catch (err) {
        throw new PlatformError("IO_ERROR", `cannot write the ${kind} profile to ${output}: ${(err as Error).message}`, { cause: err });
      } finally {
        session.disconnect();
      }
    },
  };
}
