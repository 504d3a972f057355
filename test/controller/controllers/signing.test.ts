// The signing controller against a real in-process API server: issue, refuse, retry, never twice.
import { Buffer } from "node:buffer";
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { findCondition, isIssued } from "../../../src/api/conditions.js";
import type { CaKeyPair } from "../../../src/pki/types.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import { decide, eventsFor, nodeClientCsr } from "./harness.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { until } from "../../fixtures/wait.js";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { startTracing } from "../../../src/tracing/tracer.js";
import { world, issued, failed, leafOf } from "./signing-world.js";

describe("SigningController", () => {
  it("issues an approved request, records an event and counts it", async () => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-1", { expirationSeconds: 3600 }));
    await decide(w.h, "node-1-client", "Approved");
    const csr = await issued(w, "node-1-client");
    const leaf = leafOf(csr);
    expect(leaf.verify(new X509Certificate(w.ca.certPem).publicKey)).toBe(true);
    expect(leaf.subject).toContain("CN=system:node:node-1");
    // 5 minutes backdated, one hour asked for.
    expect((Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 1000).toBe(3600 + 300);
    const events = await eventsFor(w.h, csr);
    expect(events.map((e) => [e.type, e.reason, e.action])).toEqual([["Normal", "CertificateIssued", "Sign"]]);
    const text = await w.metrics.registry.metrics();
    expect(text).toMatch(/platform_ca_csr_signed_total\{signer="platform\.io\/apiserver-client-nodeagent"\} 1/);
    expect(text).toMatch(/platform_ca_csr_requested_duration_seconds_sum\{signer="platform\.io\/apiserver-client-nodeagent"\} 3600/);
    expect(text).toMatch(/platform_ca_csr_honoured_duration_seconds_sum\{signer="platform\.io\/apiserver-client-nodeagent"\} 3900/);
  });

  it("traces each sync, and the signing inside it, when given a tracer", async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = await startTracing({ endpoint: "localhost:4317", samplingRatePerMillion: 1_000_000 }, { serviceName: "platform-ca-controller-manager", exporter });
    const w = await world({ tracer });
    await w.create(await nodeClientCsr(w.h.names, "node-t", { expirationSeconds: 3600 }));
    await decide(w.h, "node-t-client", "Approved");
    await issued(w, "node-t-client");
    const spans = exporter.getFinishedSpans();
    const sign = spans.find((s) => s.name === "sign")!;
    expect(sign.attributes).toEqual({ signerName: w.h.names.signers.nodeagentClient });
    const sync = spans.find((s) => s.spanContext().spanId === sign.parentSpanContext?.spanId)!;
    expect(sync.name).toBe("csrsigning sync");
    expect(sync.attributes).toEqual({ key: "node-t-client" });
    await tracer.shutdown();
  });

  it.each([
    ["a denied request", "Denied" as const],
    ["a request nobody approved", undefined],
  ])("never issues %s", async (_name, decision) => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-2"));
    if (decision) await decide(w.h, "node-2-client", decision);
    // A later request goes through, so the controller had every chance to act on the first one.
    await w.create(await nodeClientCsr(w.h.names, "node-3"));
    await decide(w.h, "node-3-client", "Approved");
    await issued(w, "node-3-client");
    const untouched = await w.get("node-2-client");
    expect(untouched.status?.certificate).toBeUndefined();
    expect(findCondition(untouched, "Failed")).toBeUndefined();
    expect(w.signed).toEqual(["system:node:node-3"]);
  });

  it.each([
    ["an organization other than system:nodes", { o: ["developers"] }, /needs organization exactly \["system:nodes"\]/],
    ["a DNS name on a client certificate", { dns: ["node-4.example"] }, /does not allow DNS subject alternative names/],
    ["a server usage", { usages: ["digital signature", "server auth"] }, /usage "server auth" is not allowed/],
  ])("marks a request with %s Failed with the signer's reason and a warning", async (_name, options, reason) => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-4", options));
    await decide(w.h, "node-4-client", "Approved");
    const csr = await failed(w, "node-4-client");
    const condition = findCondition(csr, "Failed")!;
    expect(condition).toMatchObject({ status: "True", reason: "SignerValidationFailure" });
    expect(condition.message).toMatch(reason);
    expect(csr.status?.certificate).toBeUndefined();
    const events = await eventsFor(w.h, csr);
    expect(events.map((e) => [e.type, e.reason])).toEqual([["Warning", "SignerValidationFailure"]]);
    expect(events[0]!.note).toMatch(reason);
    expect(w.signed).toEqual([]);
  });

  it("retries with backoff while the signer has no CA, without marking the request Failed", async () => {
    let loaded: CaKeyPair | undefined;
    const w = await world({ provider: { current: () => loaded } });
    await w.create(await nodeClientCsr(w.h.names, "node-5"));
    await decide(w.h, "node-5-client", "Approved");
    await until(() => (w.signed.length >= 1 ? true : undefined), "a first attempt");
    await w.h.clock.advance(50);
    expect(w.signed.length).toBeGreaterThan(1);
    const waiting = await w.get("node-5-client");
    expect(findCondition(waiting, "Failed")).toBeUndefined();
    expect(waiting.status?.certificate).toBeUndefined();
    loaded = w.ca.ca;
    const csr = await until(async () => {
      await w.h.clock.advance(1000);
      const c = await w.get("node-5-client");
      return isIssued(c) ? c : undefined;
    }, "issuance once the CA is there");
    expect(leafOf(csr).verify(new X509Certificate(w.ca.certPem).publicKey)).toBe(true);
  });

  it("writes nothing for a request that is already issued", async () => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-6"));
    await decide(w.h, "node-6-client", "Approved");
    const first = await issued(w, "node-6-client");
    // A change that re-delivers the object to the controller.
    const patched = await w.h.admin.csrs.patch("node-6-client", "merge", { metadata: { labels: { touched: "yes" } } });
    await until(() => (w.h.csrInformer.get("node-6-client")?.metadata.labels?.touched ? true : undefined), "the cache to see the label");
    await w.h.clock.advance(1000);
    const after = await w.get("node-6-client");
    expect(after.status?.certificate).toBe(first.status?.certificate);
    expect(after.metadata.resourceVersion).toBe(patched.metadata.resourceVersion);
    expect(w.signed).toEqual(["system:node:node-6"]);
  });

  it("re-reads on a conflict and writes the certificate it already has", async () => {
    let touched = false;
    const w = await world({
      during: async (_r, self) => {
        if (touched) return;
        touched = true;
        await self.h.admin.csrs.patch("node-7-client", "merge", { metadata: { labels: { racing: "writer" } } });
      },
    });
    await w.create(await nodeClientCsr(w.h.names, "node-7"));
    await decide(w.h, "node-7-client", "Approved");
    const csr = await issued(w, "node-7-client");
    expect(csr.metadata.labels).toEqual({ racing: "writer" });
    expect(w.signed).toEqual(["system:node:node-7"]);
  });

  it("stops after a conflict when another writer issued the request meanwhile", async () => {
    let other = "";
    const w = await world({
      during: async (r, self) => {
        if (other) return;
        const current = await self.h.admin.csrs.get("node-8-client");
        other = Buffer.from(await createBuiltinSigners({ ca: self.ca.ca, groupSuffix: self.h.names.suffix })[1]!.sign(r, new Date(self.h.clock.now()))).toString("base64");
        await self.h.admin.csrs.update({ ...current, status: { ...current.status, certificate: other } }, { subresource: "status" });
      },
    });
    await w.create(await nodeClientCsr(w.h.names, "node-8"));
    await decide(w.h, "node-8-client", "Approved");
    const csr = await issued(w, "node-8-client");
    await w.h.clock.advance(1000);
    expect((await w.get("node-8-client")).status?.certificate).toBe(other);
    expect(csr.status?.certificate).toBe(other);
    expect((await eventsFor(w.h, csr)).filter((e) => e.reason === "CertificateIssued")).toEqual([]);
  });

  it("ignores requests for signers it does not have", async () => {
    const w = await world();
    await w.create(await newCsrObject({ names: w.h.names, name: "custom", cn: "x", signerName: "example.com/custom" }));
    await decide(w.h, "custom", "Approved");
    await w.create(await nodeClientCsr(w.h.names, "node-9"));
    await decide(w.h, "node-9-client", "Approved");
    await issued(w, "node-9-client");
    const custom = await w.get("custom");
    expect(custom.status?.certificate).toBeUndefined();
    expect(findCondition(custom, "Failed")).toBeUndefined();
  });
});
