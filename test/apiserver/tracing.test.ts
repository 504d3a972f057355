import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { UserInfo } from "../../src/api/meta.js";
import { PlatformError } from "../../src/errors.js";
import type { Pipeline } from "../../src/apiserver/pipeline.js";
import { requestSpanName, trustsTraceContext } from "../../src/apiserver/tracing.js";
import { NO_TRACING, startTracing, type Tracer } from "../../src/tracing/tracer.js";
import { newCsrObject } from "../fixtures/csr.js";
import { serverFixture } from "./fixtures.js";
import { call } from "./http-client.js";

/** Bearer tokens name the caller: `master` is in system:masters, `monitor` in system:monitoring, `user` in neither. */
const USERS: Record<string, UserInfo> = {
  master: { username: "admin", groups: ["system:masters", "system:authenticated"] },
  monitor: { username: "prometheus", groups: ["system:monitoring", "system:authenticated"] },
  user: { username: "alice", groups: ["system:authenticated"] },
};
const pipeline: Pipeline = {
  authenticate: async (r) => USERS[String(r.headers.authorization ?? "").replace("Bearer ", "")],
  authorize: async (a) => (a.user.username === "alice" && a.verb === "delete" ? { allowed: false, reason: "no" } : { allowed: true }),
  admit: async (_a, obj) => {
    if (obj?.metadata?.name === "refused") throw new PlatformError("FORBIDDEN", "refused by admission");
  },
};

const INCOMING_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const INCOMING_SPAN = "00f067aa0ba902b7";
const traceparent = `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01`;

async function tracedServer(samplingRatePerMillion: number) {
  const exporter = new InMemorySpanExporter();
  const tracer = await startTracing({ endpoint: "localhost:4317", samplingRatePerMillion }, { serviceName: "platform-ca-apiserver", exporter });
  const server = await serverFixture({ tracer, pipeline });
  stops.push(async () => (await server.stop(), await tracer.shutdown()));
  return { server, exporter, tracer };
}

const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
});

const CSR_PATH = "/apis/certificates.platform.io/v1/certificatesigningrequests";
const csr = await newCsrObject();
const create = (base: string, token: string, name: string, headers: Record<string, string> = {}) =>
  call(base, "POST", CSR_PATH, { body: { ...csr, metadata: { name } }, headers: { authorization: `Bearer ${token}`, ...headers } });
const requestSpans = (spans: ReadableSpan[]) => spans.filter((s) => s.kind === 1 /* SERVER */);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe("API server tracing", async () => {
  const sampled = await tracedServer(1_000_000);
  beforeEach(() => sampled.exporter.reset());

  it("one trace per CSR create, with authentication, authorization, admission and storage under the request span", async () => {
    const res = await create(sampled.server.address, "user", "traced-1");
    expect(res.status).toBe(201);
    const spans = sampled.exporter.getFinishedSpans();
    const [request, ...others] = requestSpans(spans);
    expect(others).toEqual([]);
    expect(request!.name).toBe(`POST ${CSR_PATH}`);
    expect(request!.attributes).toMatchObject({ "http.response.status_code": 201, "http.request.method": "POST", "url.path": CSR_PATH, "audit-id": res.headers.get("audit-id") });
    const traceId = request!.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    expect(inTrace.map((s) => s.name).sort()).toEqual(expect.arrayContaining(["admission", "authentication", "authorization", `POST ${CSR_PATH}`, "storage create"]));
    for (const name of ["authentication", "authorization", "admission", "storage create"]) {
      const span = inTrace.find((s) => s.name === name)!;
      expect(parentOf(span), name).toBe(request!.spanContext().spanId);
      // Every child lies within the request span.
      expect(span.startTime[0] * 1e9 + span.startTime[1]).toBeGreaterThanOrEqual(request!.startTime[0] * 1e9 + request!.startTime[1]);
    }
    expect(inTrace.find((s) => s.name === "storage create")!.attributes.key).toBe("/certificates.platform.io/certificatesigningrequests/traced-1");
    expect(inTrace.find((s) => s.name === "authorization")!.attributes).toMatchObject({ verb: "create", resource: "certificatesigningrequests", decision: "allow" });
    // No span of this request escaped into another trace.
    expect(spans.filter((s) => s.spanContext().traceId !== traceId && ["authentication", "authorization", "admission"].includes(s.name))).toEqual([]);
  });

  it("an untrusted caller's traceparent is a link, never the parent; a system:masters or system:monitoring caller's continues", async () => {
    expect((await create(sampled.server.address, "user", "traced-2", { traceparent })).status).toBe(201);
    const [untrusted] = requestSpans(sampled.exporter.getFinishedSpans());
    expect(untrusted!.spanContext().traceId).not.toBe(INCOMING_TRACE);
    expect(untrusted!.parentSpanContext).toBeUndefined();
    expect(untrusted!.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([[INCOMING_TRACE, INCOMING_SPAN]]);
    for (const token of ["master", "monitor"]) {
      sampled.exporter.reset();
      await create(sampled.server.address, token, `traced-3-${token}`, { traceparent });
      const [trusted] = requestSpans(sampled.exporter.getFinishedSpans());
      expect(trusted!.spanContext().traceId, token).toBe(INCOMING_TRACE);
      expect(parentOf(trusted!)).toBe(INCOMING_SPAN);
      expect(trusted!.links).toEqual([]);
      expect(sampled.exporter.getFinishedSpans().filter((s) => s.name === "authorization")[0]!.spanContext().traceId).toBe(INCOMING_TRACE);
    }
  });

  it("a refused or unauthenticated request still ends its span, with the status code", async () => {
    const refused = await create(sampled.server.address, "user", "refused");
    expect(refused.status).toBe(403);
    const unauthenticated = await create(sampled.server.address, "nobody", "x", { traceparent });
    expect(unauthenticated.status).toBe(401);
    const [first, second] = requestSpans(sampled.exporter.getFinishedSpans());
    expect(first!.attributes["http.response.status_code"]).toBe(403);
    expect(first!.events.length + first!.status.code).toBe(0); // a refusal is not a server failure
    expect(sampled.exporter.getFinishedSpans().find((s) => s.name === "admission")!.attributes["error.type"]).toBe("FORBIDDEN");
    expect(second!.attributes["http.response.status_code"]).toBe(401);
    expect(second!.spanContext().traceId).not.toBe(INCOMING_TRACE);
  });

  it("at samplingRatePerMillion 0 only a trusted sampled parent makes a request sampled", async () => {
    const { server, exporter } = await tracedServer(0);
    await create(server.address, "user", "unsampled-1");
    await create(server.address, "user", "unsampled-2", { traceparent });
    expect(exporter.getFinishedSpans()).toEqual([]);
    await create(server.address, "master", "sampled-by-parent", { traceparent });
    expect(requestSpans(exporter.getFinishedSpans()).map((s) => s.spanContext().traceId)).toEqual([INCOMING_TRACE]);
  });
});

describe("tracing helpers", () => {
  it("trusts the sender before impersonation, by group", () => {
    expect(trustsTraceContext(USERS.master)).toBe(true);
    expect(trustsTraceContext(USERS.monitor)).toBe(true);
    expect(trustsTraceContext(USERS.user)).toBe(false);
    expect(trustsTraceContext(undefined)).toBe(false);
  });

  it("names request spans as upstream, with {:namespace} and {:name}", async () => {
    const server = await serverFixture();
    stops.push(() => server.stop());
    const apis = server.registry.catalog;
    expect(requestSpanName("GET", "/api/v1/namespaces/kube-system/serviceaccounts/default?x=1", apis)).toBe("GET /api/v1/namespaces/{:namespace}/serviceaccounts/{:name}");
    expect(requestSpanName("PUT", `${CSR_PATH}/csr-1/approval`, apis)).toBe(`PUT ${CSR_PATH}/{:name}/approval`);
    expect(requestSpanName("GET", "/healthz", apis)).toBe("GET");
  });

  it("does not make spans that could not be sampled: no parent at rate 0, or a parent not sampled", async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = await startTracing({ endpoint: "localhost:4317", samplingRatePerMillion: 0 }, { serviceName: "t", exporter });
    expect(tracer.samplesNewTraces).toBe(false);
    expect(tracer.inSpan("root", {}, (span) => span.recording)).toBe(false);
    const unsampled = tracer.start("request", { parent: { traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-00` } });
    expect(tracer.run(unsampled, () => tracer.inSpan("child", {}, (span) => [span.recording, tracer.current()?.recording]))).toEqual([false, false]);
    const sampledParent = tracer.start("request", { parent: { traceparent } });
    expect(tracer.run(sampledParent, () => tracer.inSpan("child", {}, (span) => span.traceparent()?.slice(0, 35)))).toBe(`00-${INCOMING_TRACE}`);
    sampledParent.end();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["child", "request"]);
    await tracer.shutdown();
  });

  it("NO_TRACING calls straight through", async () => {
    const tracer: Tracer = NO_TRACING;
    expect(tracer.inSpan("x", {}, () => 42)).toBe(42);
    expect(await tracer.inSpan("x", {}, async () => 43)).toBe(43);
    expect(tracer.runPending(() => 44)).toBe(44);
    expect(tracer.current()).toBeUndefined();
  });
});
