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
    // The sync's requests carry its traceparent and admin.conf is system:masters: the server continues that trace.
    const status = spans.find((s) => s.service === "platform-ca-apiserver" && s.traceId === sync.traceId && s.name.endsWith("/certificatesigningrequests/{:name}/status"));
    expect(status?.kind).toBe(2); // SERVER
    expect(spans.find((s) => s.spanId === status!.parentSpanId)?.service).toBe("platform-ca-controller-manager");
  });
});
