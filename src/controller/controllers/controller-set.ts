// One term of work: the API resources, the informers, the event recorder and the enabled controllers, started and stopped together.
import type { GroupNames } from "../../api/group.js";
import type { ApiObject } from "../../api/meta.js";
import { AUTHORIZATION_VERSION, type SubjectAccessReview } from "../../api/types/authorization.js";
import { LEASE_VERSION, type Lease } from "../../api/types/coordination.js";
import { CSR_VERSION, type CertificateSigningRequest } from "../../api/types/csr.js";
import { CERTIFICATE_REVOCATION_PLURAL, CERTIFICATE_REVOCATION_VERSION, type CertificateRevocation } from "../../api/types/certificate-revocation.js";
import { EVENT_VERSION, type Event } from "../../api/types/event.js";
import { CLUSTER_TRUST_BUNDLE_VERSION, type ClusterTrustBundle } from "../../api/types/trust-bundle.js";
import { CORE_VERSION, type ConfigMap, type Namespace, type Secret } from "../../api/types/core.js";
import type { SigningKey } from "../../apiserver/auth/sa-signing-key.js";
import type { ResourceClient } from "../../client/types.js";
import type { Logger } from "../../logger.js";
import type { SignerRegistry } from "../../../signers/registry.js";
import type { Clock } from "../../time/clock.js";
import { EventRecorder } from "../event-recorder.js";
import { Informer, stripManagedFields } from "../informer.js";
import type { ControllerMetrics } from "../metrics.js";
import type { ServingApprovalPolicy } from "../../../signers/serving-approval.js";
import { ApprovingController, APPROVING_CONTROLLER } from "./approving.js";
import { CLEANER_CONTROLLER, CsrCleaner, type CleanerRules } from "./cleaner.js";
import { CsrParser } from "./csr-object.js";
import { SigningPool } from "../../pki/signing-pool.js";
import type { Controller } from "../controller.js";
import { SigningController, SIGNING_CONTROLLER } from "./signing.js";
import { PUBLISHER_CONTROLLER, TrustBundlePublisher } from "./trust-bundle-publisher.js";
import { DEFAULT_SERVICE_ACCOUNT, SERVICE_ACCOUNT_CONTROLLER, ServiceAccountController } from "./service-account.js";
import { CrlPublisher, type CrlStore } from "./crl-publisher.js";
import { ROOT_CA_PUBLISHER_CONTROLLER, RootCaPublisher } from "./root-ca-publisher.js";
import { TOKEN_CONTROLLER, TokenController } from "./token-secrets.js";
import { TOKEN_CLEANER_CONTROLLER, TokenCleaner } from "./token-cleaner.js";
import { BOOTSTRAP_SIGNER_CONTROLLER, BootstrapSigner } from "./bootstrap-signer.js";
import { CLUSTER_INFO_NAME } from "../../api/cluster-info.js";
import { CLUSTERROLE_AGGREGATION_CONTROLLER, ClusterRoleAggregation } from "./clusterrole-aggregation.js";
import { RBAC_VERSION, type ClusterRole } from "../../api/types/rbac.js";

/** The names `Generic.Controllers` and `--controllers` use. */
export const CONTROLLER_NAMES = [SIGNING_CONTROLLER, APPROVING_CONTROLLER, CLEANER_CONTROLLER, PUBLISHER_CONTROLLER, SERVICE_ACCOUNT_CONTROLLER, ROOT_CA_PUBLISHER_CONTROLLER, TOKEN_CONTROLLER, TOKEN_CLEANER_CONTROLLER, BOOTSTRAP_SIGNER_CONTROLLER, CLUSTERROLE_AGGREGATION_CONTROLLER] as const;
/** Controllers `*` leaves out, as upstream's controller manager leaves out its tokencleaner and bootstrapsigner. */
export const DISABLED_BY_DEFAULT: readonly ControllerName[] = [TOKEN_CLEANER_CONTROLLER, BOOTSTRAP_SIGNER_CONTROLLER];
export type ControllerName = (typeof CONTROLLER_NAMES)[number];

/** Reported as `reportingController` on every Event. */
export const REPORTING_CONTROLLER = "platform-ca-controller-manager";
/** How long a stopping term waits for queued Events before dropping the rest. */
export const EVENT_FLUSH_TIMEOUT_MS = 5_000;
/**
 * Event writes in flight once the controllers have no backlog. A burst's Events are written after its certificates,
 * and with 16 in flight the server of `up` was 70–80% busy in that tail, each write waiting for its round trip and
 * group commit; with 64 the tail of 10,000 CSRs' Events took ~2.3 s instead of ~3 s (docs/benchmarks.md "e2e").
 */
export const EVENT_WRITERS = 64;
/** The event recorder's batch window: long enough to gather a burst's events, short beside the events' own use. */
export const EVENT_BATCH_DELAY_MS = 20;

/** What the controllers need of a REST client (`createClient(...)` gives one). */
export interface ResourceSource {
  resource<T extends ApiObject>(ref: { group: string; version: string; plural: string; namespaced: boolean }): ResourceClient<T>;
}

export interface ControllerResources {
  readonly csrs: ResourceClient<CertificateSigningRequest>;
  readonly trustBundles: ResourceClient<ClusterTrustBundle>;
  /** Read by the CRL publisher (revocations by serial). */
  readonly revocations: ResourceClient<CertificateRevocation>;
  readonly events: ResourceClient<Event>;
  readonly leases: ResourceClient<Lease>;
  /** Create-only: POST answers with the review's status filled in. */
  readonly subjectAccessReviews: ResourceClient<SubjectAccessReview>;
  readonly namespaces: ResourceClient<Namespace>;
  readonly serviceAccounts: ResourceClient;
  readonly configMaps: ResourceClient<ConfigMap>;
  readonly secrets: ResourceClient<Secret>;
  readonly clusterRoles: ResourceClient<ClusterRole>;
}

export function controllerResources(client: ResourceSource, names: GroupNames): ControllerResources {
  return {
    csrs: client.resource({ group: names.certificates, version: CSR_VERSION, plural: "certificatesigningrequests", namespaced: false }),
    trustBundles: client.resource({ group: names.certificates, version: CLUSTER_TRUST_BUNDLE_VERSION, plural: "clustertrustbundles", namespaced: false }),
    revocations: client.resource({ group: names.certificates, version: CERTIFICATE_REVOCATION_VERSION, plural: CERTIFICATE_REVOCATION_PLURAL, namespaced: false }),
    events: client.resource({ group: names.events, version: EVENT_VERSION, plural: "events", namespaced: true }),
    leases: client.resource({ group: names.coordination, version: LEASE_VERSION, plural: "leases", namespaced: true }),
    subjectAccessReviews: client.resource({ group: names.authorization, version: AUTHORIZATION_VERSION, plural: "subjectaccessreviews", namespaced: false }),
    namespaces: client.resource({ group: "", version: CORE_VERSION, plural: "namespaces", namespaced: false }),
    serviceAccounts: client.resource({ group: "", version: CORE_VERSION, plural: "serviceaccounts", namespaced: true }),
    configMaps: client.resource({ group: "", version: CORE_VERSION, plural: "configmaps", namespaced: true }),
    secrets: client.resource({ group: "", version: CORE_VERSION, plural: "secrets", namespaced: true }),
    clusterRoles: client.resource({ group: names.rbac, version: RBAC_VERSION, plural: "clusterroles", namespaced: false }),
  };
}

export interface ControllerSetOptions {
  readonly resources: ControllerResources;
  readonly names: GroupNames;
  readonly signers: SignerRegistry;
  readonly enabled: ReadonlySet<ControllerName>;
  readonly identity: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: ControllerMetrics;
  readonly csrWorkers: number;
  readonly minResyncPeriodMs: number;
  /** How long syncs in flight may finish when the term ends. */
  readonly stopTimeoutMs: number;
  readonly autoApproveClient: boolean;
  /** How long the approver reuses an allowed SubjectAccessReview (ms; default 10 s). */
  readonly reviewCacheTtlMs?: number;
  readonly servingPolicy?: ServingApprovalPolicy;
  readonly cleaner: { readonly periodMs: number; readonly rules: CleanerRules };
  readonly publisherResyncMs: number;
  /** Where the CRL publisher (run with the trust-bundle publisher) leaves each signer's latest CRL. */
  readonly crlStore?: CrlStore;
  /** The signing controller's worker pool; default one per term with a thread per core (none on one core). */
  readonly signingPool?: SigningPool;
  /** Threads of that default pool (default one per core). */
  readonly signingPoolWorkers?: number;
  /** The bundle the root CA publisher puts in every namespace; without it that controller does not run. */
  readonly rootCa?: string;
  /** The key the token controller signs token Secrets' tokens with; without it that controller does not run. */
  readonly tokenKey?: SigningKey;
  /** The token controller's workers (SAController.ConcurrentSATokenSyncs; default 5). */
  readonly tokenWorkers?: number;
}

export class ControllerSet {
  readonly controllers: readonly Controller[];
  private readonly csrInformer: Informer<CertificateSigningRequest>;
  private readonly bundleInformer: Informer<ClusterTrustBundle> | undefined;
  /** CertificateRevocations, for the CRL publisher (run with the trust-bundle publisher). */
  private readonly revocationInformer: Informer<CertificateRevocation> | undefined;
  /** Namespaces, when the service-account controller or the root CA publisher runs. */
  private readonly namespaceInformer: Informer<Namespace> | undefined;
  /** The `default` ServiceAccounts, when the service-account controller runs. */
  private readonly defaultsInformer: Informer<ApiObject> | undefined;
  /** The root CA ConfigMaps, when the root CA publisher runs. */
  private readonly rootCaInformer: Informer<ConfigMap> | undefined;
  /** The token Secrets and every ServiceAccount, when the token controller runs. */
  private readonly tokenSecretInformer: Informer<Secret> | undefined;
  private readonly accountInformer: Informer<ApiObject> | undefined;
  /** Bootstrap token Secrets, when the token cleaner runs. */
  private readonly bootstrapTokenInformer: Informer<Secret> | undefined;
  private readonly clusterInfoInformer: Informer<ConfigMap> | undefined;
  private readonly clusterRoleInformer: Informer<ClusterRole> | undefined;
  private readonly recorder: EventRecorder;
  /** Made by this term (closed when it stops), not given by the caller. */
  private readonly ownPool: SigningPool | undefined;
  private stopping: Promise<void> | undefined;

  constructor(o: ControllerSetOptions) {
    const { clock, logger, metrics, resources } = o;
    // Every informer drops managedFields, as upstream's controller manager does: no controller reads them.
    const base = { clock, logger, minResyncPeriodMs: o.minResyncPeriodMs, transform: stripManagedFields };
    this.csrInformer = new Informer<CertificateSigningRequest>({ ...base, listWatcher: resources.csrs, name: "certificatesigningrequests" });
    this.bundleInformer = o.enabled.has(PUBLISHER_CONTROLLER) ? new Informer<ClusterTrustBundle>({ ...base, listWatcher: resources.trustBundles, name: "clustertrustbundles" }) : undefined;
    this.revocationInformer = o.enabled.has(PUBLISHER_CONTROLLER) ? new Informer<CertificateRevocation>({ ...base, listWatcher: resources.revocations, name: CERTIFICATE_REVOCATION_PLURAL }) : undefined;
    const publishRootCa = o.enabled.has(ROOT_CA_PUBLISHER_CONTROLLER) && o.rootCa !== undefined;
    this.namespaceInformer = o.enabled.has(SERVICE_ACCOUNT_CONTROLLER) || publishRootCa ? new Informer<Namespace>({ ...base, listWatcher: resources.namespaces, name: "namespaces" }) : undefined;
    this.defaultsInformer = o.enabled.has(SERVICE_ACCOUNT_CONTROLLER)
      ? new Informer<ApiObject>({ ...base, listWatcher: resources.serviceAccounts, name: "serviceaccounts", fieldSelector: `metadata.name=${DEFAULT_SERVICE_ACCOUNT}` })
      : undefined;
    this.rootCaInformer = publishRootCa
      ? new Informer<ConfigMap>({ ...base, listWatcher: resources.configMaps, name: "configmaps", fieldSelector: `metadata.name=${o.names.rootCaConfigMap.name}` })
      : undefined;
    const tokens = o.enabled.has(TOKEN_CONTROLLER) && o.tokenKey !== undefined;
    this.tokenSecretInformer = tokens
      ? new Informer<Secret>({ ...base, listWatcher: resources.secrets, name: "secrets", fieldSelector: `type=${o.names.secretTypes.serviceAccountToken}` })
      : undefined;
    this.accountInformer = tokens ? new Informer<ApiObject>({ ...base, listWatcher: resources.serviceAccounts, name: "serviceaccounts" }) : undefined;
    const { namespace: tokenNamespace, secretType: bootstrapType, publicNamespace } = o.names.bootstrapTokens;
    const signCluster = o.enabled.has(BOOTSTRAP_SIGNER_CONTROLLER);
    this.bootstrapTokenInformer = o.enabled.has(TOKEN_CLEANER_CONTROLLER) || signCluster
      ? new Informer<Secret>({ ...base, listWatcher: resources.secrets, name: "bootstrap-token-secrets", namespace: tokenNamespace, fieldSelector: `type=${bootstrapType}` })
      : undefined;
    this.clusterInfoInformer = signCluster
      ? new Informer<ConfigMap>({ ...base, listWatcher: resources.configMaps, name: "cluster-info", namespace: publicNamespace, fieldSelector: `metadata.name=${CLUSTER_INFO_NAME}` })
      : undefined;
    this.clusterRoleInformer = o.enabled.has(CLUSTERROLE_AGGREGATION_CONTROLLER)
      ? new Informer<ClusterRole>({ ...base, listWatcher: resources.clusterRoles, name: "clusterroles" })
      : undefined;
    this.recorder = new EventRecorder({
      client: resources.events,
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: o.identity.slice(0, 128),
      groupSuffix: o.names.suffix,
      clock,
      logger,
      onResult: metrics.eventResult(),
      // Events yield to the work they report on: one writer while any controller has keys waiting, EVENT_WRITERS after
      // (enough that each of the store's group commits takes many events: with four, a burst's tail of events went at
      // one flush per four).
      // A stopping term has no backlog to yield to, so its flush drains at full speed.
      busy: () => this.stopping === undefined && this.controllers.some((c) => c.backlog() > 0),
      // Events are written in batches: the first after a quiet spell waits this long for company, so a burst's events
      // reach the server together and share its group commits instead of trickling in one transaction each.
      batchDelayMs: EVENT_BATCH_DELAY_MS,
      maxInFlight: EVENT_WRITERS,
    });
    metrics.watchEventQueue(this.recorder);
    const common = { clock, logger, metrics, stopTimeoutMs: o.stopTimeoutMs };
    const parser = new CsrParser();
    const csr = { csrs: resources.csrs, informer: this.csrInformer, events: this.recorder, parser };
    const controllers: Controller[] = [];
    if (o.enabled.has(APPROVING_CONTROLLER)) {
      controllers.push(
        new ApprovingController({
          ...common,
          ...csr,
          reviews: resources.subjectAccessReviews,
          names: o.names,
          signers: o.signers,
          workers: o.csrWorkers,
          autoApproveClient: o.autoApproveClient,
          ...(o.reviewCacheTtlMs !== undefined && { reviewCacheTtlMs: o.reviewCacheTtlMs }),
          ...(o.servingPolicy && { servingPolicy: o.servingPolicy }),
        }),
      );
    }
    if (o.enabled.has(SIGNING_CONTROLLER)) {
      this.ownPool = o.signingPool ? undefined : new SigningPool({ logger, ...(o.signingPoolWorkers !== undefined && { workers: o.signingPoolWorkers }) });
      const pool = o.signingPool ?? this.ownPool!;
      controllers.push(new SigningController({ ...common, ...csr, signers: o.signers, workers: o.csrWorkers, pool }));
    }
    if (this.bundleInformer) {
      controllers.push(
        new TrustBundlePublisher({ ...common, bundles: resources.trustBundles, informer: this.bundleInformer, signers: o.signers, names: o.names, resyncMs: o.publisherResyncMs }),
        // The CRL is published beside the trust anchors, on the same bundle objects.
        new CrlPublisher({
          ...common,
          bundles: resources.trustBundles,
          bundleInformer: this.bundleInformer,
          csrInformer: this.csrInformer,
          ...(this.revocationInformer && { revocationInformer: this.revocationInformer }),
          signers: o.signers,
          names: o.names,
          resyncMs: o.publisherResyncMs,
          ...(o.crlStore && { store: o.crlStore }),
        }),
      );
    }
    if (o.enabled.has(CLEANER_CONTROLLER)) controllers.push(new CsrCleaner({ ...common, csrs: resources.csrs, informer: this.csrInformer, periodMs: o.cleaner.periodMs, rules: o.cleaner.rules }));
    const namespaces = this.namespaceInformer;
    if (namespaces && this.defaultsInformer) controllers.push(new ServiceAccountController({ ...common, serviceAccounts: resources.serviceAccounts, namespaces, defaults: this.defaultsInformer }));
    if (namespaces && this.rootCaInformer) {
      controllers.push(new RootCaPublisher({ ...common, configMaps: resources.configMaps, namespaces, published: this.rootCaInformer, names: o.names, rootCa: o.rootCa! }));
    }
    if (this.tokenSecretInformer && this.accountInformer) {
      controllers.push(
        new TokenController({
          ...common,
          workers: o.tokenWorkers ?? 5,
          secrets: resources.secrets,
          serviceAccounts: resources.serviceAccounts,
          tokenSecrets: this.tokenSecretInformer,
          accounts: this.accountInformer,
          names: o.names,
          key: o.tokenKey!,
          ...(o.rootCa !== undefined && { rootCa: o.rootCa }),
        }),
      );
    }
    const bootstrapTokens = this.bootstrapTokenInformer;
    if (bootstrapTokens && o.enabled.has(TOKEN_CLEANER_CONTROLLER)) controllers.push(new TokenCleaner({ ...common, secrets: resources.secrets, tokens: bootstrapTokens, secretType: bootstrapType }));
    if (bootstrapTokens && this.clusterInfoInformer) {
      controllers.push(
        new BootstrapSigner({ ...common, configMaps: resources.configMaps, clusterInfo: this.clusterInfoInformer, tokens: bootstrapTokens, secretType: bootstrapType, tokenNamespace, publicNamespace }),
      );
    }
    if (this.clusterRoleInformer) controllers.push(new ClusterRoleAggregation({ ...common, clusterRoles: resources.clusterRoles, informer: this.clusterRoleInformer }));
    this.controllers = controllers;
  }

  /** Starts the informers and every controller; resolves once all caches synced and workers run (or `signal` aborted). */
  async start(signal: AbortSignal): Promise<void> {
    this.csrInformer.start(signal);
    this.bundleInformer?.start(signal);
    this.revocationInformer?.start(signal);
    for (const i of this.namespaceScoped()) i.start(signal);
    await Promise.all(this.controllers.map((c) => c.start(signal)));
  }

  /** Stops the controllers (syncs in flight finish up to the stop timeout), then the informers, then flushes events. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(this.controllers.map((c) => c.stop()));
      await Promise.all([this.csrInformer.stop(), this.bundleInformer?.stop(), this.revocationInformer?.stop(), ...this.namespaceScoped().map((i) => i.stop())]);
      await Promise.all([this.recorder.flush(EVENT_FLUSH_TIMEOUT_MS), this.ownPool?.close()]);
    })();
    return this.stopping;
  }

  synced(): boolean {
    return this.csrInformer.hasSynced() && (this.bundleInformer?.hasSynced() ?? true) && (this.revocationInformer?.hasSynced() ?? true) && this.namespaceScoped().every((i) => i.hasSynced());
  }

  /** The informers of the controllers of namespaced objects that run (per-namespace ones, token Secrets, bootstrap tokens, cluster-info; ClusterRoles too). */
  private namespaceScoped(): Informer<ApiObject>[] {
    return [this.namespaceInformer, this.defaultsInformer, this.rootCaInformer, this.tokenSecretInformer, this.accountInformer, this.bootstrapTokenInformer, this.clusterInfoInformer, this.clusterRoleInformer].filter((i) => i !== undefined) as Informer<ApiObject>[];
  }

  ready(): boolean {
    return this.synced() && this.controllers.every((c) => c.ready());
  }
}
