// The one tracer shape of the server and the controllers: spans in the current context, a no-op when tracing is off.
//
// Nothing here loads OpenTelemetry: `startTracing` imports it only when a TracingConfiguration is given, so a process
// without `--tracing-config-file` (and every offline command) neither loads it nor pays for spans: NO_TRACING's calls
// return at once.
import { isPlatformError } from "../errors.js";

/** The most `samplingRatePerMillion` can be: every new trace sampled. */
export const MAX_SAMPLING_RATE_PER_MILLION = 1_000_000;

/** What a TracingConfiguration file sets (read and checked by src/config/tracing-config.ts). */
export interface TracingConfig {
  /** `host:port` or `http://host:port` (plain gRPC, as upstream: no TLS), or `https://host:port`. */
  readonly endpoint: string;
  /** Root spans sampled per million; a span with a parent follows its parent's decision. */
  readonly samplingRatePerMillion: number;
}

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/** An incoming W3C trace context (`traceparent`, `tracestate` headers), not yet trusted or linked. */
export interface IncomingContext {
  readonly traceparent: string;
  readonly tracestate?: string;
}

export interface TraceSpan {
  /** Whether the span records (is sampled): a name or attributes that cost something are worth computing only then. */
  readonly recording: boolean;
  rename(name: string): void;
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed with `err` (a PlatformError by its code and message; a request that was refused is not a failure). */
  fail(err: unknown): void;
  /** Ends the span now, or at `endTimeMs` (epoch milliseconds, fractional). */
  end(endTimeMs?: number): void;
  /** W3C `traceparent` of this span, for outgoing requests (undefined when not recording). */
  traceparent(): string | undefined;
}

export interface StartSpanOptions {
  readonly attributes?: SpanAttributes;
  /** Epoch milliseconds (fractional): a span opened after the fact, e.g. a request's once its caller is known. */
  readonly startTimeMs?: number;
  /** The parent: the current span by default; `null` for a new trace; an incoming context to continue it. */
  readonly parent?: IncomingContext | null;
  /** Contexts recorded as links (an untrusted caller's trace context). */
  readonly links?: readonly IncomingContext[];
  readonly kind?: "server" | "internal";
}

export interface Tracer {
  readonly enabled: boolean;
  /** Whether a span without a parent may be sampled (samplingRatePerMillion > 0). */
  readonly samplesNewTraces: boolean;
  start(name: string, options?: StartSpanOptions): TraceSpan;
  /** Runs `fn` with `span` as the current span (spans started inside it, through awaits, are its children). */
  run<T>(span: TraceSpan, fn: () => T): T;
  /**
   * Runs `fn` in a scope whose span is given later through `attach` (a request's, opened once its caller is known):
   * spans started in the scope after that are its children, wherever they run.
   */
  runPending<T>(fn: (attach: (span: TraceSpan) => void) => T): T;
  /** start, run, fail on a throw or rejection, end. */
  inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: TraceSpan) => T): T;
  /** The current span (undefined outside any span or when tracing is off). */
  current(): TraceSpan | undefined;
  /** Sends what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

export const NOOP_SPAN: TraceSpan = Object.freeze({ recording: false, rename() {}, setAttributes() {}, fail() {}, end() {}, traceparent: () => undefined });

/** Tracing off: every call returns at once, `inSpan` is a plain call. */
export const NO_TRACING: Tracer = Object.freeze({
  enabled: false,
  samplesNewTraces: false,
  start: () => NOOP_SPAN,
  run: <T>(_span: TraceSpan, fn: () => T) => fn(),
  runPending: <T>(fn: (attach: (span: TraceSpan) => void) => T) => fn(() => undefined),
  inSpan: <T>(_name: string, _attributes: SpanAttributes, fn: (span: TraceSpan) => T) => fn(NOOP_SPAN),
  current: () => undefined,
  shutdown: async () => undefined,
});

/** Refusals (a 4xx decided on purpose) leave the span's status unset, as upstream's HTTP spans; other errors mark it failed. */
export function isFailure(err: unknown): boolean {
  return !isPlatformError(err) || err.httpStatus >= 500;
}

/** The incoming trace context of a request's headers, if it carries one. */
export function incomingContext(headers: Readonly<Record<string, string | string[] | undefined>>): IncomingContext | undefined {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const traceparent = one(headers.traceparent);
  if (!traceparent) return undefined;
  const tracestate = one(headers.tracestate);
  return { traceparent, ...(tracestate !== undefined && { tracestate }) };
}

export interface StartTracingOptions {
  /** `service.name` of the spans (platform-ca-apiserver, platform-ca-controller-manager). */
  readonly serviceName: string;
  /** Where spans go instead of the OTLP gRPC exporter (tests: an in-memory exporter, exported at each span's end). */
  readonly exporter?: unknown;
  /**
   * Told when spans could not be sent (the collector unreachable): at the first failure, then at most once a minute.
   * Tracing never fails the process: shutdown() resolves even when its last export fails.
   */
  readonly onExportError?: (err: Error) => void;
}

/** A tracer for `config` (OpenTelemetry loaded now), or NO_TRACING without one. */
export async function startTracing(config: TracingConfig | undefined, options: StartTracingOptions): Promise<Tracer> {
  if (!config) return NO_TRACING;
  const { createOtelTracer } = await import("./otel.js");
  return createOtelTracer(config, options);
}

let processTracer: Tracer = NO_TRACING;

/** The tracer of this process (thread), for code started without one (the controllers); NO_TRACING until set. */
export function defaultTracer(): Tracer {
  return processTracer;
}

export function setDefaultTracer(tracer: Tracer): void {
  processTracer = tracer;
}
