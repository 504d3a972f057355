// bench:tracing — requests/s of `platform-ca apiserver` without --tracing-config-file, traced at samplingRatePerMillion
// 0 (nothing sampled) and at 1,000,000 (every request's spans exported to a local OTLP gRPC receiver), beside a
// second untraced server whose difference from the first is the noise of the run.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startOtlpReceiver } from "../fixtures/otlp-receiver.js";
import { compareServerSettings } from "./server-settings.js";

const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-tracing-"));
// Spans are counted, not kept: the receiver runs in this process, beside the load generator.
const receiver = await startOtlpReceiver({ keep: false });
function tracingArgs(rate: number): string[] {
  const file = join(dir, `tracing-${rate}.yaml`);
  writeFileSync(file, `apiVersion: apiserver.config.platform.io/v1\nkind: TracingConfiguration\nendpoint: ${receiver.endpoint}\nsamplingRatePerMillion: ${rate}\n`);
  return ["--tracing-config-file", file];
}
try {
  await compareServerSettings("bench:tracing", [
    { name: "not configured", args: [] },
    // A second server without tracing: how far two identical settings drift apart on this machine (the noise floor).
    { name: "not configured again", args: [] },
    { name: "rate 0", args: tracingArgs(0) },
    { name: "rate 1000000", args: tracingArgs(1_000_000) },
  ]);
  console.log(`spans received: ${receiver.received()} in ${receiver.exports()} exports`);
} finally {
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
}
