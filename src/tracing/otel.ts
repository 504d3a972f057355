// The Tracer over OpenTelemetry: parent-based sampling at samplingRatePerMillion, W3C trace context, OTLP gRPC export.
// Loaded only by startTracing (a dynamic import), never at the start of a process without a tracing configuration.
import { AsyncLocalStorage } from "node:async_hooks";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, trace, type Context, type Link, type Span } from "@opentelemetry/api";
import { W3CTraceContextPropagator, setGlobalErrorHandler } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { toPlatformError } from "../errors.js";
import { VERSION } from "../version.js";
import { MAX_SAMPLING_RATE_PER_MILLION, NOOP_SPAN, isFailure, type TracingConfig, type IncomingContext, type SpanAttributes, type StartSpanOptions, type StartTracingOptions, type TraceSpan, type Tracer } from "./tracer.js";

const propagator = new W3CTraceContextPropagator();

/** The exporter's URL: `host:port` is plain gRPC (upstream's tracing connection is insecure unless https:// is written). */
export function exporterUrl(endpoint: string): string {
  return /^https?:\/\//.test(endpoint) ? endpoint : `http://${endpoint}`;
}

function extract(incoming: IncomingContext): Context {
  return propagator.extract(ROOT_CONTEXT, { traceparent: incoming.traceparent, ...(incoming.tracestate !== undefined && { tracestate: incoming.tracestate }) }, defaultTextMapGetter);
}

class OtelSpan implements TraceSpan {
  constructor(readonly inner: Span) {}
  get recording(): boolean {
    return this.inner.isRecording();
  }
  rename(name: string): void {
    this.inner.updateName(name);
  }
  setAttributes(attributes: SpanAttributes): void {
    this.inner.setAttributes(attributes);
  }
  fail(err: unknown): void {
    const e = toPlatformError(err);
    this.inner.setAttribute("error.type", e.code);
    if (!isFailure(err)) return;
    this.inner.recordException({ name: e.code, message: e.message });
    this.inner.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
  }
  end(endTimeMs?: number): void {
    this.inner.end(endTimeMs);
  }
  traceparent(): string | undefined {
    const c = this.inner.spanContext();
    return trace.isSpanContextValid(c) ? `00-${c.traceId}-${c.spanId}-0${c.traceFlags & 1}` : undefined;
  }
}

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof (v as PromiseLike<unknown> | null)?.then === "function";

export async function createOtelTracer(config: TracingConfig, options: StartTracingOptions): Promise<Tracer> {
  const exporter = (options.exporter as SpanExporter | undefined) ?? new (await import("@opentelemetry/exporter-trace-otlp-grpc")).OTLPTraceExporter({ url: exporterUrl(config.endpoint) });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName, "service.version": VERSION }),
    // Unset (0): only spans whose parent was sampled are; a root span is sampled at rate/1e6.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.samplingRatePerMillion / MAX_SAMPLING_RATE_PER_MILLION) }),
    // A given exporter (tests) sees each span as it ends; the OTLP exporter gets batches.
    spanProcessors: [options.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer("platform-ca", VERSION);
  // Export failures reach OpenTelemetry's (process-wide) error handler: reported at the first, then once a minute.
  let reportedAt = -Infinity;
  const reportError = (err: unknown) => {
    if (performance.now() - reportedAt < 60_000) return;
    reportedAt = performance.now();
    options.onExportError?.(err instanceof Error ? err : new Error(String(err)));
  };
  setGlobalErrorHandler(reportError);
  // Our own context store (no global context manager is registered): spans started inside run() are its children.
  // It holds a cell, so runPending can set the scope's span after the scope began.
  const store = new AsyncLocalStorage<{ context: Context }>();
  const currentContext = () => store.getStore()?.context ?? ROOT_CONTEXT;
  const samplesNewTraces = config.samplingRatePerMillion > 0;
  const self: Tracer = {
    enabled: true,
    samplesNewTraces,
    start(name: string, o: StartSpanOptions = {}): TraceSpan {
      const parent = o.parent === null ? ROOT_CONTEXT : o.parent ? extract(o.parent) : currentContext();
      const links: Link[] = (o.links ?? []).flatMap((l) => {
        const context = trace.getSpanContext(extract(l));
        return context && trace.isSpanContextValid(context) ? [{ context }] : [];
      });
      const span = tracer.startSpan(
        name,
        { kind: o.kind === "server" ? SpanKind.SERVER : SpanKind.INTERNAL, ...(o.attributes && { attributes: o.attributes }), ...(o.startTimeMs !== undefined && { startTime: o.startTimeMs }), links },
        parent,
      );
      return new OtelSpan(span);
    },
    run<T>(span: TraceSpan, fn: () => T): T {
      return span instanceof OtelSpan ? store.run({ context: trace.setSpan(ROOT_CONTEXT, span.inner) }, fn) : fn();
    },
    runPending<T>(fn: (attach: (span: TraceSpan) => void) => T): T {
      const cell = { context: ROOT_CONTEXT };
      return store.run(cell, () => fn((span) => {
        if (span instanceof OtelSpan) cell.context = trace.setSpan(ROOT_CONTEXT, span.inner);
      }));
    },
    inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: TraceSpan) => T): T {
      // A span that would not be sampled (its parent is not, or it starts a trace at rate 0) is not made: parent-based
      // sampling would drop it and its children anyway, and the context switch is most of a span's cost.
      const parent = trace.getSpan(currentContext());
      if (parent ? !parent.isRecording() : !samplesNewTraces) return fn(NOOP_SPAN);
      const span = self.start(name, { attributes });
      let result: T;
      try {
        result = self.run(span, () => fn(span));
      } catch (err) {
        span.fail(err);
        span.end();
        throw err;
      }
      if (!isThenable(result)) {
        span.end();
        return result;
      }
      return result.then(
        (value) => (span.end(), value),
        (err: unknown) => {
          span.fail(err);
          span.end();
          throw err;
        },
      ) as T;
    },
    current() {
      const span = trace.getSpan(currentContext());
      return span ? new OtelSpan(span) : undefined;
    },
    shutdown: () => provider.shutdown().catch(reportError),
  };
  return self;
}
