// The embedded API server: registry + HTTP over a Storage, with start(signal)/stop() and loopback-by-default listening.
import type { FastifyInstance } from "fastify";
import { groupNames, DEFAULT_GROUP_SUFFIX, type GroupNames } from "../api/group.js";
import { schemaRegistry } from "../api/schema.js";
import { invalidOption } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { systemClock, type Clock } from "../time/clock.js";
import type { Storage } from "./storage/types.js";
import type { Pipeline } from "./pipeline.js";
import { createSelfSubjectAccessReviewHandler, pipelineAuthorizer } from "./auth/subject-access-review.js";
import { createSelfSubjectRulesReviewHandler, pipelineRuleResolver } from "./auth/rules-review.js";
import { allResources } from "./registry/resources/index.js";
import { DEFAULT_EVENT_TTL_SECONDS, Registry } from "./registry/registry.js";
import type { CreateHandler, ResourceDefinition } from "./registry/strategy.js";
import { buildHttpApp, type TlsServing } from "./http/app.js";
import { WatchCaches, type WatchCacheSettings } from "./registry/watch-caches.js";
import { ApiServerMetrics } from "./metrics.js";
import { storageObjectCounter } from "./storage-objects.js";
import { isEncrypted } from "./encryption/encrypted-storage.js";
import type { HeldCertificate } from "../pki/expiry-gauge.js";
import type { AuditPolicy } from "../config/audit-policy.js";
import { Auditor } from "./audit/auditor.js";
import { auditInternal } from "./audit/internal-requests.js";
import type { AuditSink } from "../audit/log-backend.js";
import type { Tracer } from "../tracing/tracer.js";
import { tracePipeline, traceRequests, traceStorage } from "./tracing.js";
import { EgressSelector } from "./egress/index.js";
import { DEFAULT_REQUEST_TIMEOUT_MS, MAX_REQUEST_TIMEOUT_MS } from "./webhook/deadline.js";

/** Upstream's --min-request-timeout default: watches last 30 to 60 minutes. */
export const DEFAULT_MIN_REQUEST_TIMEOUT_SECONDS = 1800;

export interface ListenOptions {
  /** Default 127.0.0.1: the server is loopback-only unless told otherwise. */
  readonly host?: string;
  /** Default 0: a free port (read it from `address`). */
  readonly port?: number;
}

export interface ApiServerOptions {
  readonly storage: Storage;
  readonly pipeline: Pipeline;
  readonly groupSuffix?: string;
  readonly logger?: Logger;
  readonly clock?: Clock;
  readonly listen?: ListenOptions;
  /** HTTPS serving. Plain HTTP needs `insecure: true`. */
  readonly tls?: TlsServing;
  readonly insecure?: boolean;
  /** The resources to serve; default every seed resource (`allResources`). */
  readonly definitions?: (names: GroupNames) => readonly ResourceDefinition[];
  /** --request-timeout: how long a request that is not long-running may take (the cap of its `timeout`); default 60 s. */
  readonly requestTimeoutMs?: number;
  /** --min-request-timeout: a watch without timeoutSeconds lasts [this, 2 × this) seconds; 0 no limit; default 1800. */
  readonly minRequestTimeoutSeconds?: number;
  /** --event-ttl: an Event is deleted this many seconds after its last write; 0 keeps Events; default 3600 (an hour). */
  readonly eventTtlSeconds?: number;
  readonly watchCache?: WatchCacheSettings;
  /** The CA and serving certificates to report in /metrics (expiry gauges), read at each scrape. */
  readonly certificates?: () => readonly HeldCertificate[];
  /** Audit of requests (`--audit-policy-file`, `--audit-log-path`, `--audit-webhook-config-file`): the policy and where events go. */
  readonly audit?: { readonly policy: AuditPolicy; readonly sink: AuditSink | readonly AuditSink[] };
  /** Spans of requests (`--tracing-config-file`); without it nothing is traced or loaded. */
  readonly tracer?: Tracer;
  /** How outbound connections leave (`--egress-selector-config-file`); default every selection direct. */
  readonly egress?: EgressSelector;
}

export interface ApiServer {
  start(signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  /** `http://127.0.0.1:PORT` (or https://) once started. */
  readonly address: string;
  readonly names: GroupNames;
  readonly registry: Registry;
  /** The fastify instance (for in-process `inject` in tests). */
  readonly app: FastifyInstance;
  /** What /metrics serves. */
  readonly metrics: ApiServerMetrics;
  /** The dialers of outbound connections (webhooks, OIDC, KMS: `egress.dialer("controlplane")`; storage: "etcd"). */
  readonly egress: EgressSelector;
  registerCreateHandler(group: string, resource: string, handler: CreateHandler): void;
}

export function createApiServer(options: ApiServerOptions): ApiServer {
  if (!options || typeof options !== "object") throw invalidOption("options", "to be an object", options);
  if (!options.storage) throw invalidOption("storage", "to be a Storage", options.storage);
  if (!options.pipeline) throw invalidOption("pipeline", "to be a Pipeline", options.pipeline);
  if (!options.tls && options.insecure !== true) throw invalidOption("tls", "to be set (or `insecure: true` for plain HTTP)", options.tls);
  const host = options.listen?.host ?? "127.0.0.1";
  const port = options.listen?.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw invalidOption("listen.port", "to be an integer 0–65535", port);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!(requestTimeoutMs > 0 && requestTimeoutMs <= MAX_REQUEST_TIMEOUT_MS)) throw invalidOption("requestTimeoutMs", `> 0 and ≤ ${MAX_REQUEST_TIMEOUT_MS} (a day)`, requestTimeoutMs);
  const minRequestTimeoutSeconds = options.minRequestTimeoutSeconds ?? DEFAULT_MIN_REQUEST_TIMEOUT_SECONDS;
  if (!Number.isInteger(minRequestTimeoutSeconds) || minRequestTimeoutSeconds < 0) throw invalidOption("minRequestTimeoutSeconds", "a whole number ≥ 0", minRequestTimeoutSeconds);
  const eventTtlSeconds = options.eventTtlSeconds ?? DEFAULT_EVENT_TTL_SECONDS;
  if (!Number.isSafeInteger(eventTtlSeconds) || eventTtlSeconds < 0) throw invalidOption("eventTtlSeconds", "a whole number ≥ 0", eventTtlSeconds);
  let names: GroupNames;
  try {
    names = groupNames(options.groupSuffix ?? DEFAULT_GROUP_SUFFIX);
  } catch {
    throw invalidOption("groupSuffix", "to be a DNS name with at least two labels", options.groupSuffix);
  }
  const logger = options.logger ?? silentLogger();
  const clock = options.clock ?? systemClock;
  const definitions = (options.definitions ?? allResources)(names);
  const tracer = options.tracer?.enabled ? options.tracer : undefined;
  const pipeline = tracer ? tracePipeline(options.pipeline, tracer) : options.pipeline;
  const storage = tracer ? traceStorage(options.storage, tracer) : options.storage;
  // The auditor comes with the metrics, after the registry; the registry's own writes find it there when they happen.
  let auditor: Auditor | undefined;
  const registry = new Registry({ storage, names, clock, logger, pipeline, definitions, eventTtlSeconds, audit: auditInternal(() => auditor) });
  // "May I?" is answered by whatever authorizes this server's requests; a secure server replaces it with RBAC's answer.
  registry.registerCreateHandler(names.authorization, "selfsubjectaccessreviews", createSelfSubjectAccessReviewHandler(pipelineAuthorizer(pipeline)));
  registry.registerCreateHandler(names.authorization, "selfsubjectrulesreviews", createSelfSubjectRulesReviewHandler(pipelineRuleResolver(pipeline)));
  const caches = new WatchCaches(registry.storage, clock, logger, options.watchCache);
  let ready = false;
  const metrics = new ApiServerMetrics({
    storageObjects: storageObjectCounter(registry),
    ...(isEncrypted(options.storage) && { staleReads: options.storage.staleReads }),
    ...(isEncrypted(options.storage) && options.storage.reloadStats && { encryptionReloads: options.storage.reloadStats }),
    ...(isEncrypted(options.storage) && { transformations: options.storage.transformations }),
    ...(options.certificates && { certificates: options.certificates }),
  });
  auditor = options.audit && new Auditor({ ...options.audit, groupSuffix: names.suffix, clock, metrics: metrics.registry, logger });
  const app = buildHttpApp({
    registry,
    schemas: schemaRegistry(names),
    pipeline,
    clock,
    logger,
    cache: (store) => caches.for(store),
    minRequestTimeoutSeconds,
    requestTimeoutMs,
    tls: options.tls,
    ready: () => ready,
    ...(isEncrypted(options.storage) && { healthChecks: options.storage.checks }),
    metrics,
    ...(auditor && { auditor }),
  });
  if (tracer) traceRequests(app, tracer, registry.catalog);
  let address = "";
  let started = false;
  const stop = async () => {
    if (!started) return;
    started = false;
    ready = false;
    await app.close();
    registry.close();
    caches.stop();
    // A start that failed to listen (EADDRINUSE) has no address: name what it tried instead of an empty one.
    if (address) logger.info({ address }, "API server stopped");
    else logger.info({ listen: `${host.includes(":") ? `[${host}]` : host}:${port}` }, "API server stopped before it listened");
  };
  return {
    names,
    registry,
    app,
    metrics,
    egress: options.egress ?? EgressSelector.direct(),
    get address() {
      return address;
    },
    registerCreateHandler: (group, resource, handler) => registry.registerCreateHandler(group, resource, handler),
    async start(signal?: AbortSignal) {
      if (started) return;
      started = true;
      await registry.bootstrap();
      await app.listen({ host, port });
      const bound = app.server.address();
      const where = typeof bound === "object" && bound ? bound : { address: host, port };
      const shownHost = where.address.includes(":") ? `[${where.address}]` : where.address;
      address = `${options.tls ? "https" : "http"}://${shownHost}:${where.port}`;
      ready = true;
      logger.info({ address, groupSuffix: names.suffix, tls: Boolean(options.tls) }, "API server listening");
      signal?.addEventListener("abort", () => void stop(), { once: true });
    },
    stop,
  };
}
