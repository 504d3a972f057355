// `platform-ca up --tracing-config-file`: spans of the API server and of the controllers (own thread) reach an OTLP gRPC receiver.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newCsrObject } from "../fixtures/csr.js";
import { startOtlpReceiver, type OtlpReceiver } from "../fixtures/otlp-receiver.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";
import { ensureBuilt, kubectlWith } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";

const CSR_SPAN = "POST /apis/certificates.platform.io/v1/certificatesigningrequests";

describe("platform-ca up: tracing to an OTLP gRPC receiver", () => {
  let receiver: OtlpReceiver;
  let up: UpProcess;

  beforeAll(async () => {
    ensureBuilt();
    receiver = await startOtlpReceiver();
    const file = join(tempDir(), "tracing.yaml");
    writeFileSync(file, `apiVersion: apiserver.config.platform.io/v1\nkind: TracingConfiguration\nendpoint: ${receiver.endpoint}\nsamplingRatePerMillion: 1000000\n`);
    up = await startUp({ args: ["--tracing-config-file", file] });
  }, 240_000);
  afterAll(async () => {
    if (up?.child.exitCode === null) await up.stop();
    await receiver?.close();
  });

  it("exports a trace per CSR request and the controllers' sync and signing, and sends the last spans at SIGTERM", async () => {
    const kubectl = kubectlWith(up.adminConfig);
    kubectl(["create", "-f", "-"], JSON.stringify(await newCsrObject({ name: "traced", cn: "system:node:traced", o: ["system:nodes"] })));
    await until(() => kubectl(["get", "csr", "traced", "-o", "jsonpath={.status.certificate}"]) !== "", "the CSR to be issued");
    expect(await up.stop()).toBe(0);
    const spans = receiver.spans;
    expect(receiver.exports()).toBeGreaterThan(0);
    const create = spans.filter((s) => s.service === "platform-ca-apiserver" && s.name === CSR_SPAN);
    expect(create).toHaveLength(1);
    const trace = spans.filter((s) => s.traceId === create[0]!.traceId);
    for (const name of ["authentication", "authorization", "admission", "storage create"]) {
      expect(trace.find((s) => s.name === name)?.parentSpanId, name).toBe(create[0]!.spanId);
    }
    // The controllers' thread exports as its own service: a signing inside a csrsigning sync.
    const sign = spans.find((s) => s.service === "platform-ca-controller-manager" && s.name === "sign")!;
    expect(sign.attributes.signerName).toBe("platform.io/apiserver-client-nodeagent");
    const sync = spans.find((s) => s.spanId === sign.parentSpanId)!;
    expect(sync).toMatchObject({ name: "csrsigning sync", service: "platform-ca-controller-manager", attributes: { key: "traced" } });
    // The sync's requests carry its traceparent, but the controllers write as their own identity (not system:masters,
    // as upstream's controller manager is not): the server starts its own trace and links the controller's span.
    const status = spans.find((s) => s.service === "platform-ca-apiserver" && s.name.endsWith("/certificatesigningrequests/{:name}/status") && s.links.some((l) => l.traceId === sync.traceId));
    expect(status?.kind).toBe(2); // SERVER
    expect(status!.traceId).not.toBe(sync.traceId);
    const linked = status!.links.find((l) => l.traceId === sync.traceId)!;
    expect(spans.find((s) => s.spanId === linked.spanId)?.service).toBe("platform-ca-controller-manager");
  });
});
