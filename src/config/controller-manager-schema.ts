// The fields, types and defaults of PlatformControllerManagerConfiguration: every block of seed 002 §2.7 plus our extensions.
import { bool, duration, float, int32, list, object, oneOf, opaque, text, type Value } from "../fields/schema.js";
import { leaderMigrationShape } from "./leader-migration.js";

const port = int32(10257, { min: 0, max: 65_535 });
const count = (fallback: number) => int32(fallback, { min: 0 });

export const clientConnectionShape = object({
  kubeconfig: text(),
  acceptContentTypes: text("application/json"),
  contentType: text("application/json"),
  qps: float(20, 32),
  burst: int32(30),
});

export const leaderElectionShape = object({
  leaderElect: bool(true),
  leaseDuration: duration("15s"),
  renewDeadline: duration("10s"),
  retryPeriod: duration("2s"),
  resourceLock: text("leases"),
  resourceName: text("platform-controller-manager"),
  resourceNamespace: text("platform-system"),
});

export const genericShape = object({
  Port: port,
  Address: text("0.0.0.0"),
  MinResyncPeriod: duration("12h"),
  ClientConnection: clientConnectionShape,
  ControllerStartInterval: duration("0s"),
  LeaderElection: leaderElectionShape,
  Controllers: list(text(), ["*"]),
  Debugging: object({ enableProfiling: bool(), enableContentionProfiling: bool() }),
  LeaderMigrationEnabled: bool(),
  LeaderMigration: leaderMigrationShape,
});

const signingPair = () => object({ CertFile: text(), KeyFile: text() });

export const csrSigningShape = object({
  ClusterSigningCertFile: text(),
  ClusterSigningKeyFile: text(),
  KubeletServingSignerConfiguration: signingPair(),
  KubeletClientSignerConfiguration: signingPair(),
  KubeAPIServerClientSignerConfiguration: signingPair(),
  LegacyUnknownSignerConfiguration: signingPair(),
  ClusterSigningDuration: duration("8760h"),
});

export const SERVING_APPROVAL_POLICIES = ["Manual", "RequesterMatchesSubject", "Custom"] as const;

/**
 * Syncs in flight of the signing and of the approving controller (each). A sync mostly waits on the API server, and a
 * burst through `up` finishes sooner with 64 than with 16 (docs/benchmarks.md, e2e, 2026-11-27).
 */
export const DEFAULT_CONCURRENT_CSR_SYNCS = 64;

/** Product extensions (not in seed 002): custom signers, plug-ins, approval and clean-up policy. */
export const extensionsShape = object({
  /** Workers of the signing and of the approving controller (each). */
  ConcurrentCSRSyncs: int32(DEFAULT_CONCURRENT_CSR_SYNCS, { min: 1 }),
  CustomSigners: list(object({ policyFile: text() })),
  SignerPlugins: list(object({ module: text(), options: opaque() })),
  /** CRL Distribution Point written into every certificate a CA-backed signer issues; `{signerName}` is substituted. Empty: none. */
  CRLDistributionPointURL: text(),
  Approver: object({
    /** Approve node-agent client CSRs after an authorization check of the requester. */
    AutoApproveNodeAgentClient: bool(true),
    /** How long an allowed authorization check of a requester is reused (refusals never are); 0s: check every request. */
    AuthorizationCacheTTL: duration("10s"),
    /**
     * Serving CSRs: left to a person (Manual), approved when the requester is the node the subject names
     * (RequesterMatchesSubject), or approved under the Serving block (Custom).
     */
    ServingPolicy: oneOf(SERVING_APPROVAL_POLICIES, "Manual"),
    /** The Custom serving policy: names and addresses the certificate may carry, longest lifetime, requester. */
    Serving: object({
      DNSPatterns: list(text()),
      IPCIDRs: list(text()),
      /** 0s: no maximum. Otherwise a request without spec.expirationSeconds is left to a person. */
      MaxDuration: duration("0s"),
      UsernameMustMatchCN: bool(true),
    }),
  }),
  Cleaner: object({
    Period: duration("1h"),
    PendingExpiration: duration("24h"),
    ApprovedExpiration: duration("1h"),
    DeniedExpiration: duration("1h"),
    FailedExpiration: duration("1h"),
    /** Issued CSRs go once their certificate expired plus this grace. */
    IssuedGracePeriod: duration("0s"),
  }),
  TrustBundlePublisher: object({ Enabled: bool(true) }),
});

const concurrency = (field: string, fallback: number) => object({ [field]: count(fallback) });

/** Blocks the product accepts and type-checks but does not act on; listed as ignored when a file sets them. */
export const ignoredBlocks = {
  PlatformCloudShared: object({
    CloudProvider: object({ Name: text(), CloudConfigFile: text() }),
    ExternalCloudVolumePlugin: text(),
    UseServiceAccountCredentials: bool(),
    AllowUntaggedCloud: bool(),
    RouteReconciliationPeriod: duration("10s"),
    NodeMonitorPeriod: duration("5s"),
    ClusterName: text("platform"),
    ClusterCIDR: text(),
    AllocateNodeCIDRs: bool(),
    CIDRAllocatorType: text("RangeAllocator"),
    ConfigureCloudRoutes: bool(true),
    NodeSyncPeriod: duration("0s"),
  }),
  AttachDetachController: object({
    DisableAttachDetachReconcilerSync: bool(),
    ReconcilerSyncLoopPeriod: duration("60s"),
    disableForceDetachOnTimeout: bool(),
  }),
  DaemonSetController: concurrency("ConcurrentDaemonSetSyncs", 2),
  DeploymentController: concurrency("ConcurrentDeploymentSyncs", 5),
  StatefulSetController: concurrency("ConcurrentStatefulSetSyncs", 5),
  DeprecatedController: object({}),
  EndpointController: object({ ConcurrentEndpointSyncs: count(5), EndpointUpdatesBatchPeriod: duration("0s") }),
  EndpointSliceController: object({
    ConcurrentServiceEndpointSyncs: count(5),
    MaxEndpointsPerSlice: count(100),
    EndpointUpdatesBatchPeriod: duration("0s"),
  }),
  EndpointSliceMirroringController: object({
    MirroringConcurrentServiceEndpointSyncs: count(5),
    MirroringMaxEndpointsPerSubset: count(1000),
    MirroringEndpointUpdatesBatchPeriod: duration("0s"),
  }),
  EphemeralVolumeController: concurrency("ConcurrentEphemeralVolumeSyncs", 5),
  GarbageCollectorController: object({
    EnableGarbageCollector: bool(true),
    ConcurrentGCSyncs: count(20),
    GCIgnoredResources: list(object({ Group: text(), Resource: text() })),
  }),
  HPAController: object({
    ConcurrentHorizontalPodAutoscalerSyncs: count(5),
    HorizontalPodAutoscalerSyncPeriod: duration("15s"),
    HorizontalPodAutoscalerDownscaleStabilizationWindow: duration("5m"),
    HorizontalPodAutoscalerTolerance: float(0.1, 64, 0),
    HorizontalPodAutoscalerCPUInitializationPeriod: duration("5m"),
    HorizontalPodAutoscalerInitialReadinessDelay: duration("30s"),
  }),
  JobController: concurrency("ConcurrentJobSyncs", 5),
  CronJobController: concurrency("ConcurrentCronJobSyncs", 5),
  LegacySATokenCleaner: object({ CleanUpPeriod: duration("8760h") }),
  NamespaceController: object({ ConcurrentNamespaceSyncs: count(10), NamespaceSyncPeriod: duration("5m") }),
  NodeIPAMController: object({
    ServiceCIDR: text(),
    SecondaryServiceCIDR: text(),
    NodeCIDRMaskSize: int32(0),
    NodeCIDRMaskSizeIPv4: int32(0),
    NodeCIDRMaskSizeIPv6: int32(0),
  }),
  NodeLifecycleController: object({
    NodeEvictionRate: float(0.1, 32, 0),
    SecondaryNodeEvictionRate: float(0.01, 32, 0),
    NodeStartupGracePeriod: duration("60s"),
    NodeMonitorGracePeriod: duration("40s"),
    PodEvictionTimeout: duration("5m"),
    LargeClusterSizeThreshold: int32(50),
    UnhealthyZoneThreshold: float(0.55, 32, 0),
  }),
  PersistentVolumeBinderController: object({
    PVClaimBinderSyncPeriod: duration("15s"),
    VolumeConfiguration: object({
      EnableHostPathProvisioning: bool(),
      EnableDynamicProvisioning: bool(true),
      PersistentVolumeRecyclerConfiguration: object({
        MaximumRetry: int32(3),
        MinimumTimeoutNFS: int32(300),
        PodTemplateFilePathNFS: text(),
        IncrementTimeoutNFS: int32(30),
        PodTemplateFilePathHostPath: text(),
        MinimumTimeoutHostPath: int32(60),
        IncrementTimeoutHostPath: int32(30),
      }),
      FlexVolumePluginDir: text(),
    }),
  }),
  PodGCController: object({ TerminatedPodGCThreshold: int32(12_500) }),
  ReplicaSetController: concurrency("ConcurrentRSSyncs", 5),
  ReplicationController: concurrency("ConcurrentRCSyncs", 5),
  ResourceQuotaController: object({ ConcurrentResourceQuotaSyncs: count(5), ResourceQuotaSyncPeriod: duration("5m") }),
  ServiceController: concurrency("ConcurrentServiceSyncs", 1),
  TTLAfterFinishedController: concurrency("ConcurrentTTLSyncs", 5),
  ValidatingAdmissionPolicyStatusController: concurrency("ConcurrentPolicySyncs", 5),
} as const;

/** RootCAFile is the root CA publisher's bundle (and token Secrets' ca.crt); ServiceAccountKeyFile signs token Secrets' tokens. */
const saShape = object({ ServiceAccountKeyFile: text(), ConcurrentSATokenSyncs: count(5), RootCAFile: text() });

export const controllerManagerShape = object(
  { Generic: genericShape, CSRSigningController: csrSigningShape, PlatformCAExtensions: extensionsShape, SAController: saShape, ...ignoredBlocks },
  ["apiVersion", "kind"],
);

/** The configuration as loaded: the seed's keys, defaults filled, every Duration in milliseconds. */
export type PlatformControllerManagerConfiguration = Value<typeof controllerManagerShape>;
export type GenericControllerManagerConfiguration = Value<typeof genericShape>;
export type LeaderElectionConfiguration = Value<typeof leaderElectionShape>;
export type ClientConnectionConfiguration = Value<typeof clientConnectionShape>;
export type CSRSigningControllerConfiguration = Value<typeof csrSigningShape>;
export type PlatformCAExtensionsConfiguration = Value<typeof extensionsShape>;
