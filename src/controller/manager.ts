// The controller manager: the enabled controllers under leader election, with health, readiness and metrics.
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import { hostname } from "node:os";
import { DEFAULT_GROUP_SUFFIX, groupNames, type GroupNames } from "../api/group.js";
import { createClient, type RestClient } from "../client/rest-client.js";
import type { RestConfig } from "../client/rest-config.js";
import {
  controllerManagerApiVersion,
  CONTROLLER_MANAGER_KIND,
  isControllerEnabled,
  parseControllerManagerConfig,
  servingPolicyOf,
  type PlatformControllerManagerConfiguration,
} from "../config/controller-manager.js";
import { invalidOption } from "../errors.js";
import { childLogger, silentLogger, type Logger } from "../logger.js";
import type { SignerRegistry } from "../../signers/registry.js";
import { systemClock, type Clock } from "../time/clock.js";
import type { ServingApprovalPolicy } from "../../signers/serving-approval.js";
import { CONTROLLER_NAMES, DISABLED_BY_DEFAULT, ControllerSet, controllerResources, type ControllerName, type ControllerResources } from "./controllers/controller-set.js";
import { PUBLISHER_CONTROLLER } from "./controllers/trust-bundle-publisher.js";
import { ROOT_CA_PUBLISHER_CONTROLLER } from "./controllers/root-ca-publisher.js";
import { TOKEN_CONTROLLER } from "./controllers/token-secrets.js";
import type { SigningKey } from "../apiserver/auth/sa-signing-key.js";
import { LeaderElector } from "./leader-election.js";
import { ControllerMetrics } from "./metrics.js";
import type { CrlStore } from "./controllers/crl-publisher.js";
import { OpsServer, type OpsCheck, type OpsServing } from "./ops-server.js";

export interface ControllerManagerOptions {
  /** Worker threads of the signing pool (default one per core; 0 signs on the controllers' own thread). */
  readonly signingPoolWorkers?: number;
  /** A client for the API server; or `restConfig` to build one (then closed on stop). */
  readonly client?: RestClient;
  readonly restConfig?: RestConfig;
  readonly signers: SignerRegistry;
  /**
   * The PEM bundle the root CA publisher puts in every namespace (what verifies the API server); default the
   * restConfig's CA. Without either that controller does not run.
   */
  readonly rootCa?: string;
  /**
   * SAController.ServiceAccountKeyFile's key: the token controller signs token Secrets' tokens with it. Without it
   * that controller does not run (as upstream's, which needs a private key).
   */
  readonly serviceAccountKey?: SigningKey;
  /** The loaded configuration; every default when absent. */
  readonly config?: PlatformControllerManagerConfiguration;
  readonly names?: GroupNames;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** This replica in the lease and in Events (default `<host name>_<random>`). */
  readonly identity?: string;
  /** Where and how /healthz, /readyz and /metrics listen (default HTTPS on Generic.Address:Port); false for nowhere. */
  readonly ops?: OpsServing | false;
  /** Overrides Approver.ServingPolicy with a detailed policy. */
  readonly servingApproval?: ServingApprovalPolicy;
  /** Export process metrics too (default false). */
  readonly processMetrics?: boolean;
  /** How often the publisher compares every signer's anchors (default 60 s). */
  readonly publisherResyncMs?: number;
}

export interface ControllerManager {
  readonly identity: string;
  readonly metrics: ControllerMetrics;
  /** The controllers this manager runs while it leads. */
  readonly enabled: readonly ControllerName[];
  /** `http://host:port` of /healthz, /readyz and /metrics once started (empty without one). */
  readonly opsAddress: string;
  /** Serves health and metrics, then campaigns for the lease (or runs at once without leader election). */
  start(signal?: AbortSignal): Promise<void>;
  /** Finishes syncs in flight, releases the lease, stops serving. */
  stop(): Promise<void>;
  isLeader(): boolean;
  /** Leading with every cache synced and every controller running (always false on a standby replica). */
  working(): boolean;
}

/** Every default of the configuration kind, for callers without a file. */
export function defaultControllerManagerConfig(groupSuffix = DEFAULT_GROUP_SUFFIX): PlatformControllerManagerConfiguration {
  const text = `apiVersion: ${controllerManagerApiVersion(groupSuffix)}\nkind: ${CONTROLLER_MANAGER_KIND}\n`;
  return parseControllerManagerConfig(text, "defaults", { groupSuffix }).config;
}

export function createControllerManager(options: ControllerManagerOptions): ControllerManager {
  if (!options?.signers) throw invalidOption("signers", "to be a SignerRegistry", options?.signers);
  if (!options.client && !options.restConfig) throw invalidOption("client", "or `restConfig` to be set", undefined);
  return new Manager(options);
}

class Manager implements ControllerManager {
  readonly identity: string;
  readonly metrics: ControllerMetrics;
  readonly enabled: readonly ControllerName[];
  private readonly o: ControllerManagerOptions;
  private readonly names: GroupNames;
  private readonly config: PlatformControllerManagerConfiguration;
  private readonly clock: Clock;
  private readonly log: Logger;
  private client: RestClient | undefined;
  private resources: ControllerResources | undefined;
  private ops: OpsServer | undefined;
  /** The CRLs the terms' CRL publisher builds, served by the ops endpoint. */
  private readonly crls: CrlStore = new Map();
  private elector: LeaderElector | undefined;
  private term: ControllerSet | undefined;
  private started = false;
  private stopping: Promise<void> | undefined;
  private readonly own = new AbortController();
  private readonly rootCa: string | undefined;

  constructor(o: ControllerManagerOptions) {
    this.o = o;
    this.names = o.names ?? groupNames(DEFAULT_GROUP_SUFFIX);
    this.config = o.config ?? defaultControllerManagerConfig(this.names.suffix);
    this.clock = o.clock ?? systemClock;
    this.identity = o.identity ?? `${hostname()}_${randomUUID()}`;
    this.log = childLogger(o.logger ?? silentLogger(), { identity: this.identity });
    this.metrics = new ControllerMetrics({ processMetrics: o.processMetrics === true, signers: o.signers });
    const list = this.config.Generic.Controllers;
    const ext = this.config.PlatformCAExtensions;
    this.rootCa = o.rootCa ?? o.restConfig?.tls.ca;
    this.enabled = CONTROLLER_NAMES.filter(
      (name) =>
        isControllerEnabled(name, list, DISABLED_BY_DEFAULT) &&
        !(name === PUBLISHER_CONTROLLER && !ext.TrustBundlePublisher.Enabled) &&
        // As upstream's publisher, which has nothing to publish without a CA.
        !(name === ROOT_CA_PUBLISHER_CONTROLLER && !this.rootCa) &&
        !(name === TOKEN_CONTROLLER && !o.serviceAccountKey),
    );
    // As upstream's controller manager, which says so too: token Secrets stay empty without a key to sign with.
    if (isControllerEnabled(TOKEN_CONTROLLER, list) && !o.serviceAccountKey) {
      this.log.info({ controller: TOKEN_CONTROLLER }, "the token controller does not run: no ServiceAccount key (SAController.ServiceAccountKeyFile, --service-account-private-key-file)");
    }
  }

  get opsAddress(): string {
    return this.ops?.address ?? "";
  }

  async start(signal?: AbortSignal): Promise<void> {
    if (this.started) return;
    this.started = true;
    setMaxListeners(0, this.own.signal);
    signal?.addEventListener("abort", () => void this.stop(), { once: true });
    this.client = this.o.client ?? createClient(this.o.restConfig!, { logger: this.log, groupSuffix: this.names.suffix });
    this.resources = controllerResources(this.client, this.names);
    const where = this.o.ops === undefined ? { host: this.config.Generic.Address, port: this.config.Generic.Port } : this.o.ops;
    if (where) {
      this.ops = new OpsServer({
        ...where,
        client: this.client,
        names: this.names,
        metrics: this.metrics,
        health: () => this.health(),
        ready: () => this.readiness(),
        logger: this.log,
        crls: this.crls,
      });
      await this.ops.start();
    }
    const le = this.config.Generic.LeaderElection;
    this.log.info({ controllers: this.enabled, leaderElect: le.leaderElect, ops: this.opsAddress || undefined }, "controller manager starting");
    if (!le.leaderElect) {
      this.metrics.leader.set(1);
      void this.lead(this.own.signal);
      return;
    }
    this.elector = new LeaderElector({
      client: this.resources.leases,
      name: le.resourceName,
      namespace: le.resourceNamespace,
      identity: this.identity,
      leaseDurationMs: le.leaseDuration,
      renewDeadlineMs: le.renewDeadline,
      retryPeriodMs: le.retryPeriod,
      groupSuffix: this.names.suffix,
      clock: this.clock,
      logger: this.log,
      callbacks: {
        onStartedLeading: (leading) => {
          this.metrics.leader.set(1);
          return this.lead(leading);
        },
        onStoppedLeading: () => this.metrics.leader.set(0),
        onNewLeader: (leader) => this.log.info({ leader }, "leader observed"),
      },
    });
    this.elector.start(this.own.signal);
  }

  /** Runs one term of controllers until `leading` aborts (lease lost, or stop()). */
  private async lead(leading: AbortSignal): Promise<void> {
    if (this.stopping || leading.aborted) return;
    // Every informer, queue and worker of the term listens on this one signal.
    setMaxListeners(0, leading);
    const term = this.newTerm();
    this.term = term;
    leading.addEventListener("abort", () => void term.stop(), { once: true });
    await term.start(leading);
    if (!leading.aborted) this.log.info({ controllers: this.enabled }, "controllers running");
  }

  private newTerm(): ControllerSet {
    const c = this.config;
    const le = c.Generic.LeaderElection;
    const ext = c.PlatformCAExtensions;
    const servingPolicy = this.o.servingApproval ?? servingPolicyOf(ext.Approver);
    return new ControllerSet({
      resources: this.resources!,
      crlStore: this.crls,
      names: this.names,
      signers: this.o.signers,
      enabled: new Set(this.enabled),
      identity: this.identity,
      clock: this.clock,
      logger: this.log,
      metrics: this.metrics,
      csrWorkers: ext.ConcurrentCSRSyncs,
      ...(this.o.signingPoolWorkers !== undefined && { signingPoolWorkers: this.o.signingPoolWorkers }),
      minResyncPeriodMs: c.Generic.MinResyncPeriod,
      // A replica that lost the lease must be done before another may take it: the lease outlives the renew deadline by this much.
      stopTimeoutMs: le.leaderElect ? Math.max(0, Math.min(30_000, le.leaseDuration - le.renewDeadline - 1000)) : 30_000,
      autoApproveClient: ext.Approver.AutoApproveNodeAgentClient,
      reviewCacheTtlMs: ext.Approver.AuthorizationCacheTTL,
      ...(servingPolicy && { servingPolicy }),
      cleaner: {
        periodMs: ext.Cleaner.Period,
        rules: {
          pendingMs: ext.Cleaner.PendingExpiration,
          approvedMs: ext.Cleaner.ApprovedExpiration,
          deniedMs: ext.Cleaner.DeniedExpiration,
          failedMs: ext.Cleaner.FailedExpiration,
          issuedGraceMs: ext.Cleaner.IssuedGracePeriod,
        },
      },
      publisherResyncMs: this.o.publisherResyncMs ?? 60_000,
      ...(this.rootCa !== undefined && { rootCa: this.rootCa }),
      ...(this.o.serviceAccountKey && { tokenKey: this.o.serviceAccountKey, tokenWorkers: c.SAController.ConcurrentSATokenSyncs }),
    });
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Syncs in flight finish while the lease is still held; only then is it released.
      await this.term?.stop();
      this.own.abort();
      await this.elector?.stop();
      this.metrics.leader.set(0);
      await this.ops?.stop();
      if (!this.o.client) this.client?.close();
      this.log.info("controller manager stopped");
    })();
    return this.stopping;
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.started && !this.stopping;
  }

  working(): boolean {
    return this.isLeader() && this.term !== undefined && this.term.ready();
  }

  private health(): OpsCheck[] {
    return [{ name: "ping", ok: true }, { name: "shutdown", ok: !this.stopping, ...(this.stopping && { detail: "stopping" }) }];
  }

  private readiness(): OpsCheck[] {
    const checks: OpsCheck[] = [...this.health()];
    if (this.elector && !this.elector.isLeader()) {
      const leader = this.elector.leader();
      checks.push({ name: "leader-election", ok: true, detail: `standby${leader ? `, leader is ${leader}` : ""}` });
      return checks;
    }
    checks.push({ name: "leader-election", ok: true, detail: this.elector ? "leading" : "disabled" });
    checks.push({ name: "informers-synced", ok: this.term?.synced() ?? false });
    for (const c of this.term?.controllers ?? []) checks.push({ name: `controller-${c.name}`, ok: c.ready() });
    return checks;
  }
}
