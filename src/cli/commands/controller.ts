// `platform-ca controller`: the controller manager against an API server (signing, approving, trust bundles, cleaning).
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { DEFAULT_GROUP_SUFFIX, groupNames, type GroupNames } from "../../api/group.js";
import type { Component, ComponentContext } from "../../apiserver/bootstrap/run-server.js";
import type { LocalConnection } from "../../apiserver/bootstrap/local-socket.js";
import type { PlatformControllerManagerConfiguration } from "../../config/controller-manager.js";
import type { OpsServing } from "../../controller/ops-server.js";
import { invalidOption } from "../../errors.js";
import { createLogger, type Logger } from "../../logger.js";
import { addCaKeyKmsOptions, useCaKeyKmsFlags, type CaKeyKmsFlags } from "../ca-key-kms-flags.js";
import { durationFlag } from "../duration.js";
import { addLogOptions, applyLogFlags, type LogFlags } from "../log-flags.js";
import { addTracingOption, readTracingFlag, startProcessTracer, type TracingFlags } from "../tracing-egress-flags.js";
import { UsageError } from "../program.js";
import { abortOnSignals, parseListen } from "./apiserver.js";

export interface ControllerFlags extends LogFlags, TracingFlags, CaKeyKmsFlags {
  readonly config?: string;
  readonly platformconfig?: string;
  readonly context?: string;
  readonly groupSuffix: string;
  readonly clusterSigningCertFile?: string;
  readonly clusterSigningKeyFile?: string;
  readonly clusterSigningDuration?: string;
  readonly controllers?: string;
  readonly leaderElect?: boolean;
  readonly bindAddress?: string;
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  readonly certDir?: string;
  readonly clientCaFile?: string;
  readonly authorizationAlwaysAllowPaths?: string;
  readonly insecureHttp?: boolean;
  readonly kubeApiQps?: number;
  readonly kubeApiBurst?: number;
  readonly rootCaFile?: string;
  readonly serviceAccountPrivateKeyFile?: string;
}

/** The manager's inputs once file and flags are merged (flags win). */
export interface ControllerSettings {
  readonly names: GroupNames;
  readonly config: PlatformControllerManagerConfiguration;
  readonly signingFiles: ReadonlyMap<string, { readonly certFile: string; readonly keyFile: string }>;
  readonly kubeconfig: string;
  readonly ops: OpsServing;
  /** A co-located server's channel, unix-domain socket and controller token (`up`): in place of the kubeconfig's server and user. */
  readonly local?: LocalConnection;
  /** Threads of the signing pool (default one per core). */
  readonly signingPoolWorkers?: number;
}

function parseBool(value: string | undefined): boolean {
  if (value === undefined || value === "true") return true;
  if (value === "false") return false;
  throw invalidOption("--leader-elect", "to be true or false", value);
}

function numberFlag(flag: string, whole = false): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n) || (whole && (!Number.isInteger(n) || n < 0))) throw invalidOption(flag, whole ? "to be a whole number ≥ 0" : "to be a number", value);
    return n;
  };
}

/** Reads the file (if any), applies the flags over it, and logs what the file sets that nothing acts on. */
export async function controllerSettings(flags: ControllerFlags, logger: Logger): Promise<ControllerSettings> {
  const names = groupNames(flags.groupSuffix);
  const { defaultControllerManagerConfig } = await import("../../controller/manager.js");
  const { loadControllerManagerConfig } = await import("../../config/controller-manager.js");
  let config = defaultControllerManagerConfig(names.suffix);
  let signingFiles = new Map<string, { certFile: string; keyFile: string }>();
  let addressSet = false;
  if (flags.config) {
    const loaded = await loadControllerManagerConfig(flags.config, { groupSuffix: names.suffix });
    for (const warning of loaded.warnings) logger.warn({ file: flags.config }, warning);
    if (loaded.ignored.length > 0) logger.info({ file: flags.config, blocks: loaded.ignored }, "configuration blocks accepted but not acted on");
    config = loaded.config;
    signingFiles = new Map(loaded.signingFiles);
    // The file's Address is used only when the file sets it; otherwise health and metrics stay on loopback.
    addressSet = loaded.addressSet;
  }
  const generic = config.Generic;
  const cert = flags.clusterSigningCertFile;
  const key = flags.clusterSigningKeyFile;
  if ((cert === undefined) !== (key === undefined)) throw new UsageError("--cluster-signing-cert-file and --cluster-signing-key-file go together");
  if (cert !== undefined && key !== undefined) signingFiles = new Map(Object.values(names.signers).map((n) => [n, { certFile: cert, keyFile: key }]));
  if (flags.clusterSigningDuration !== undefined) {
    config.CSRSigningController.ClusterSigningDuration = durationFlag(flags.clusterSigningDuration, "--cluster-signing-duration") * 1000;
  }
  if (flags.controllers !== undefined) generic.Controllers = flags.controllers.split(",").map((s) => s.trim()).filter(Boolean);
  if (flags.leaderElect !== undefined) generic.LeaderElection.leaderElect = flags.leaderElect;
  if (flags.kubeApiQps !== undefined) generic.ClientConnection.qps = flags.kubeApiQps;
  if (flags.kubeApiBurst !== undefined) generic.ClientConnection.burst = flags.kubeApiBurst;
  if (flags.rootCaFile !== undefined) config.SAController.RootCAFile = resolve(flags.rootCaFile);
  if (flags.serviceAccountPrivateKeyFile !== undefined) config.SAController.ServiceAccountKeyFile = resolve(flags.serviceAccountPrivateKeyFile);
  const listen = flags.bindAddress !== undefined ? parseListen(flags.bindAddress) : { host: addressSet ? generic.Address : "127.0.0.1", port: generic.Port };
  const ops: OpsServing = {
    ...listen,
    ...(flags.insecureHttp === true && { insecureHttp: true }),
    ...(flags.tlsCertFile !== undefined && { tlsCertFile: flags.tlsCertFile }),
    ...(flags.tlsPrivateKeyFile !== undefined && { tlsKeyFile: flags.tlsPrivateKeyFile }),
    ...(flags.certDir !== undefined && { certDir: flags.certDir }),
    ...(flags.clientCaFile !== undefined && { clientCaFile: flags.clientCaFile }),
    ...(flags.authorizationAlwaysAllowPaths !== undefined && { alwaysAllowPaths: flags.authorizationAlwaysAllowPaths.split(",").map((p) => p.trim()).filter(Boolean) }),
  };
  return { names, config, signingFiles, kubeconfig: flags.platformconfig ?? generic.ClientConnection.kubeconfig, ops };
}

export interface RunControllerOptions {
  readonly settings: ControllerSettings;
  readonly context?: string;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** Told the ops address once the manager runs. */
  readonly onStarted?: (opsAddress: string) => void;
}

/** Builds the signers and the manager and runs them until `signal` aborts; returns after a clean stop. */
export async function runController(o: RunControllerOptions): Promise<{ stop(): Promise<void>; settled(maxMs: number): Promise<void> }> {
  const { settings, logger } = o;
  const [{ restConfigFromConnection }, { signersFromConfig }, { createControllerManager }, { isControllerEnabled }, { PUBLISHER_CONTROLLER }, { sharedVerifiedMemo, shareVerifiedMemo }, { SharedVerifiedMemo }, { readCaBundle }, { readSigningKey }] = await Promise.all([
    import("../../client/connection-config.js"),
    import("../../controller/controllers/signers-from-config.js"),
    import("../../controller/manager.js"),
    import("../../config/controller-manager.js"),
    import("../../controller/controllers/trust-bundle-publisher.js"),
    import("../../pki/csr-signature.js"),
    import("../../pki/verified-memo.js"),
    import("../../client/tls-material.js"),
    import("../../apiserver/auth/sa-signing-key.js"),
  ]);
  // The approver's checks reach the signing pool's threads through a memory of verified requests the process shares
  // (in `up` the API server's thread made it, and its create checks are in it): a request is verified once.
  if (sharedVerifiedMemo() === undefined) shareVerifiedMemo(new SharedVerifiedMemo());
  const { config, names } = settings;
  const conn = config.Generic.ClientConnection;
  const fromFile = await restConfigFromConnection(
    { kubeconfig: settings.kubeconfig, acceptContentTypes: conn.acceptContentTypes, contentType: conn.contentType, qps: conn.qps, burst: conn.burst },
    { groupSuffix: names.suffix, ...(o.context !== undefined && { context: o.context }) },
  );
  // Plain HTTP on the socket, as the controller identity (the token), instead of HTTPS as admin.conf's user; with a
  // channel, every request goes over it, watches included (no socket, no HTTP parsing).
  const restConfig = settings.local
    ? { ...fromFile, server: "http://localhost", tls: {}, credentials: { type: "token" as const, token: settings.local.token }, socketPath: settings.local.socketPath, ...(settings.local.channel && { channel: settings.local.channel }) }
    : fromFile;
  // As upstream: the root CA publisher's bundle is --root-ca-file, else the CA the client configuration trusts for the
  // server (`up`: the data directory's cluster CA, which signed the server's certificate).
  const rootCaFile = config.SAController.RootCAFile;
  const rootCa = rootCaFile !== "" ? await readCaBundle({ where: "--root-ca-file (SAController.RootCAFile)", path: rootCaFile }) : fromFile.tls.ca;
  const keyFile = config.SAController.ServiceAccountKeyFile;
  const serviceAccountKey = keyFile !== "" ? await readSigningKey(keyFile) : undefined;
  const ext = config.PlatformCAExtensions;
  const signers = await signersFromConfig({
    names,
    signingFiles: settings.signingFiles,
    maxDurationSeconds: Math.floor(config.CSRSigningController.ClusterSigningDuration / 1000),
    customSigners: ext.CustomSigners,
    plugins: ext.SignerPlugins,
    logger,
    ...(ext.CRLDistributionPointURL !== "" && { crlDistributionPointUrl: ext.CRLDistributionPointURL }),
  });
  if (signers.registry.size === 0) {
    throw new UsageError("no signer is configured: give --cluster-signing-cert-file and --cluster-signing-key-file, CSRSigningController files, CustomSigners or SignerPlugins");
  }
  await signers.start(o.signal);
  const manager = createControllerManager({ restConfig, signers: signers.registry, config, names, logger, ops: settings.ops, processMetrics: true, ...(rootCa !== undefined && { rootCa }), ...(serviceAccountKey && { serviceAccountKey }), ...(settings.signingPoolWorkers !== undefined && { signingPoolWorkers: settings.signingPoolWorkers }) });
  const stop = async (): Promise<void> => {
    await manager.stop();
    signers.stop();
  };
  try {
    await manager.start(o.signal);
  } catch (err) {
    await stop();
    throw err;
  }
  logger.info({ signers: signers.registry.names(), ops: manager.opsAddress, server: connectionOf(settings.local) }, "controller manager running");
  o.onStarted?.(manager.opsAddress);
  const publishing = ext.TrustBundlePublisher.Enabled && isControllerEnabled(PUBLISHER_CONTROLLER, config.Generic.Controllers);
  // Asked once: a CRL issuer holds the CA's signing key, not something to build again at every poll below.
  const withCrl = new Set(signers.registry.names().filter((name) => signers.registry.get(name).crlIssuer?.() !== undefined));
  /** Every controller runs and (with the publisher) every signer's trust bundle, and its CRL if it has a CA, is out. */
  const done = async () => {
    if (!manager.working()) return false;
    if (!publishing) return true;
    const synced = new Set((await manager.metrics.trustBundleSyncs.get()).values.map((v) => v.labels.signer));
    const crls = new Set((await manager.metrics.crlNextUpdate.get()).values.map((v) => v.labels.signer));
    return signers.registry.names().every((name) => synced.has(name) && (crls.has(name) || !withCrl.has(name)));
  };
  /** Resolves once the first work is done (or after `maxMs`): what start-up logs is logged by then. */
  const settled = async (maxMs: number) => {
    const deadline = Date.now() + maxMs;
    while (!(await done()) && Date.now() < deadline && !o.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  return { stop, settled };
}

/** How the controllers reach their server, in words for the log. */
function connectionOf(local: LocalConnection | undefined): string {
  if (!local) return "HTTPS (the client configuration file)";
  return local.channel ? "in-thread channel" : `unix-domain socket ${local.socketPath}`;
}

/**
 * The settings of the controllers beside an embedded server (`platform-ca up`): defaults, the cluster CA for every
 * built-in signer; through the server's in-thread channel and unix-domain socket as the controller identity when the
 * context has them, else over HTTPS as the administrator of admin.conf. Either way through the server's request path
 * like any client.
 */
export async function embeddedControllerSettings(
  ctx: Pick<ComponentContext, "names" | "caFiles" | "adminConfigPath" | "local"> & { readonly replicated?: boolean; readonly dataDir?: string },
): Promise<ControllerSettings> {
  const [{ defaultControllerManagerConfig }, { PKI_DIR }, { SA_KEY_FILE }] = await Promise.all([
    import("../../controller/manager.js"),
    import("../../apiserver/bootstrap/pki.js"),
    import("../../apiserver/auth/sa-signing-key.js"),
  ]);
  const config = defaultControllerManagerConfig(ctx.names.suffix);
  // As kubeadm's clusters, expired bootstrap tokens are deleted and cluster-info is signed with the tokens meant for
  // it (upstream's controller manager leaves both off unless named).
  config.Generic.Controllers = [...config.Generic.Controllers, "tokencleaner", "bootstrapsigner"];
  // Token Secrets are filled with tokens signed by the key the server checks ServiceAccount tokens with.
  if (ctx.dataDir !== undefined) config.SAController.ServiceAccountKeyFile = join(ctx.dataDir, PKI_DIR, SA_KEY_FILE);
  // One process on loopback: nobody to elect against; beside replicas on a shared store (etcd) the Lease decides.
  config.Generic.LeaderElection.leaderElect = ctx.replicated === true;
  // Nor a shared server to protect from this client: the controllers talk to their own server, and an upstream-style
  // 20 requests/s throttle would hold them to 4 CSRs/s (five requests per CSR). Their workers bound the load.
  config.Generic.ClientConnection.qps = 0;
  const signingFiles = new Map(Object.values(ctx.names.signers).map((n) => [n, ctx.caFiles]));
  // HTTPS on a free loopback port; client certificates of the cluster CA (admin.conf's) and tokens are accepted.
  // With `local`, requests go through the server's channel and socket instead (no TLS per request), as the controller identity.
  return {
    names: ctx.names,
    config,
    signingFiles,
    kubeconfig: ctx.adminConfigPath,
    ops: { host: "127.0.0.1", port: 0, clientCaFile: ctx.caFiles.certFile },
    ...(ctx.local && { local: ctx.local }),
    // The server's thread and the controllers' own already keep two cores busy in a burst: the pool gets the others.
    // Measured on 2 cores, a pool there added no throughput and made the signing queue wait 8× longer
    // (docs/benchmarks.md, e2e).
    signingPoolWorkers: Math.max(0, availableParallelism() - 2),
  };
}

/** The controller manager on the server's own thread (`up` runs it on a thread of its own: controller-thread.ts). */
export const controllerComponent: Component = {
  name: "controller-manager",
  async start(ctx: ComponentContext) {
    return runController({ settings: await embeddedControllerSettings(ctx), logger: ctx.logger, signal: ctx.signal });
  },
};

export const controllerCommand = (program: Command): void => {
  addCaKeyKmsOptions(addTracingOption(addLogOptions(program.command("controller")))
    .description("run the controllers against an API server: sign approved CSRs, auto-approve node-agent client CSRs, publish trust bundles, clean up")
    .option("--config <file>", "a PlatformControllerManagerConfiguration file")
    .option("--platformconfig <file>", "client config file of the API server (overrides ClientConnection.kubeconfig)")
    .option("--context <name>", "context of the client config file to use")
    .option("--group-suffix <suffix>", "API group suffix; k8s.io also selects upstream's well-known names (kubernetes.io/kube-apiserver-client, ...)", DEFAULT_GROUP_SUFFIX)
    .option("--cluster-signing-cert-file <file>", "CA certificate of the four built-in signers (overrides CSRSigningController)")
    .option("--cluster-signing-key-file <file>", "CA private key of the four built-in signers")
    .option("--cluster-signing-duration <duration>", "longest certificate lifetime (e.g. 8760h)")
    .option("--controllers <list>", "controllers to run: * for all, name to enable, -name to disable (csrsigning, csrapproving, csrcleaner, clustertrustbundle-publisher, serviceaccount, root-ca-cert-publisher, serviceaccount-token, clusterrole-aggregation; tokencleaner and bootstrapsigner only when named)")
    .option("--leader-elect [bool]", "run only while holding the lease (true or false)", parseBool)
    .option("--kube-api-qps <number>", "requests per second to the API server once the burst is spent; ≤ 0 for no limit (overrides ClientConnection.qps, default 20)", numberFlag("--kube-api-qps"))
    .option("--kube-api-burst <number>", "burst of requests to the API server (overrides ClientConnection.burst, default 30)", numberFlag("--kube-api-burst", true))
    .option("--root-ca-file <file>", "CA bundle the root CA publisher puts in every namespace (overrides SAController.RootCAFile; default the CA the client configuration trusts for the server)")
    .option("--service-account-private-key-file <file>", "the API server's ServiceAccount signing key (its data directory's pki/sa-signing-key.pem): the token controller fills token Secrets with tokens signed by it (overrides SAController.ServiceAccountKeyFile; without either that controller does not run)")
    .addHelpText("after", "\nExamples:\n  platform-ca controller --platformconfig controller.conf --cluster-signing-cert-file ca.crt --cluster-signing-key-file ca.key\n  platform-ca controller --config controller-manager.yaml --leader-elect --bind-address 0.0.0.0:10257\n  platform-ca controller --platformconfig controller.conf --cluster-signing-cert-file data/pki/ca.crt --cluster-signing-key-file data/pki/ca.key --encryption-provider-config encryption.yaml --ca-key-kms kms1\n")
    .option("--bind-address <host:port>", "where /healthz, /readyz and /metrics listen (HTTPS); port 0 picks a free port (default 127.0.0.1:10257)")
    .option("--tls-cert-file <file>", "serving certificate of /healthz, /readyz and /metrics (default: self-signed)")
    .option("--tls-private-key-file <file>", "its private key")
    .option("--cert-dir <dir>", "where the self-signed serving certificate is kept across restarts (default: in memory)")
    .option("--client-ca-file <file>", "CA certificates that client certificates to /metrics are verified against (bearer tokens are reviewed by the API server)")
    .option("--authorization-always-allow-paths <list>", "paths served without authentication or authorization (default /healthz,/readyz,/livez)")
    .option("--insecure-http", "serve /healthz, /readyz and /metrics over plain HTTP without authentication (development only)"), "--cluster-signing-key-file and the key files of the configuration")
    .action(async (flags: ControllerFlags) => {
      applyLogFlags(flags);
      const logger = createLogger({ name: "controller-manager" });
      const tracing = await readTracingFlag(flags, flags.groupSuffix, logger);
      const settings = await controllerSettings(flags, logger);
      // Before the signers read their CA key files: a wrapped one is unwrapped through it.
      await useCaKeyKmsFlags(flags, flags.groupSuffix);
      const tracer = await startProcessTracer(tracing, "platform-ca-controller-manager", logger);
      const controller = new AbortController();
      abortOnSignals(controller, logger);
      const running = await runController({
        settings,
        ...(flags.context !== undefined && { context: flags.context }),
        logger,
        signal: controller.signal,
        onStarted: (ops) => process.stdout.write(`controller manager running; health and metrics on ${ops || "(disabled)"}\n`),
      });
      if (!controller.signal.aborted) await new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve(), { once: true }));
      await running.stop();
      await tracer.shutdown();
    });
};
