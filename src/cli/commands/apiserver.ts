// `platform-ca apiserver`: the embedded API server on durable storage in a data directory, HTTPS with identity by default.
import type { Agent as HttpsAgent } from "node:https";
import type { Command } from "commander";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../../api/group.js";
import { REVOCATION_UNAVAILABLE, type RevocationUnavailable } from "../../apiserver/auth/revocation-list.js";
import type { Component } from "../../apiserver/bootstrap/run-server.js";
import { MAX_REQUEST_TIMEOUT_MS } from "../../apiserver/webhook/deadline.js";
import { createLogger, type Logger } from "../../logger.js";
import { addAdmissionOptions, readAdmissionSettings, type AdmissionFlags } from "../admission-flags.js";
import { addAuditOptions, openAuditSinks, readAuditSetup, type AuditFlags } from "../audit-flags.js";
import { addCaKeyKmsOption } from "../ca-key-kms-flags.js";
import { addAuthorizationOptions, readAuthorizationSettings, type AuthorizationFlags } from "../authorization-flags.js";
import type { AuditSink } from "../../audit/log-backend.js";
import type { EgressSelector } from "../../apiserver/egress/index.js";
import type { Dialer } from "../../apiserver/webhook/client.js";
import { addEgressOption, addTracingOption, startTracingAndEgress, type EgressFlags, type TracingFlags } from "../tracing-egress-flags.js";
import { durationFlagMs } from "../duration.js";
import { holdListenAddress } from "../listen.js";
import { addLogOptions, applyLogFlags, type LogFlags } from "../log-flags.js";
import { UsageError } from "../program.js";
import { addStorageOptions, storageBackend, throughEgress, type StorageFlags } from "../storage-flags.js";

export interface ServeFlags extends LogFlags, AuditFlags, AdmissionFlags, AuthorizationFlags, TracingFlags, EgressFlags, StorageFlags {
  dataDir: string;
  listen: string;
  groupSuffix: string;
  tokenFile?: string;
  clientCaFile?: string;
  anonymousAuth?: boolean;
  enableBootstrapTokenAuth?: boolean;
  revocationUnavailable?: string;
  encryptionProviderConfig?: string;
  encryptionProviderConfigAutomaticReload?: boolean;
  caKeyKms?: string;
  authenticationConfig?: string;
  requestTimeout: string;
  minRequestTimeout: string;
  eventTtl: string;
}

interface ApiserverFlags extends ServeFlags {
  insecureLocal?: boolean;
}

/** `HOST:PORT` or `[IPv6]:PORT`. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError(`expected \`--listen\` to be HOST:PORT (e.g. 127.0.0.1:6443), got ${JSON.stringify(text)}`);
  return { host: (m[1] ?? m[2])!, port };
}

/** Checks `--group-suffix` before anything is created: a bad one must not leave a store behind. */
function checkGroupSuffix(suffix: string): void {
  try {
    groupNames(suffix);
  } catch {
    throw new UsageError(`expected \`--group-suffix\` to be a DNS name with at least two labels (e.g. platform.io), got ${JSON.stringify(suffix)}`);
  }
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;

/** The flags `apiserver` and `up` share: where, which groups, and who may connect. */
export function addServeOptions(command: Command, dataDir?: string): Command {
  const serve = addStorageOptions(addEgressOption(addTracingOption(addAuthorizationOptions(addAdmissionOptions(addAuditOptions(addLogOptions(command)))))))
    .option("--listen <host:port>", "address to listen on; port 0 picks a free port", "127.0.0.1:6443")
    .option("--request-timeout <duration>", "a request still unanswered after this is answered 504 Timeout (its work goes on); the default and the cap of its `timeout` parameter; watches excepted", "1m0s")
    .option("--min-request-timeout <seconds>", "a watch without timeoutSeconds ends after a random time between this and twice this; 0 leaves it open", "1800")
    .option("--event-ttl <duration>", "how long an Event is kept after its last write; 0 keeps Events until they are deleted", "1h0m0s")
    .option("--group-suffix <suffix>", "API group suffix; k8s.io also selects upstream's well-known names (kubernetes.io/kube-apiserver-client, ...)", DEFAULT_GROUP_SUFFIX)
    .option("--token-file <file>", 'static bearer tokens, CSV lines `token,user,uid,"group1,group2"`')
    .option("--client-ca-file <file>", "extra CA certificates trusted for client certificates, beside the cluster CA")
    .option("--anonymous-auth", "serve requests without credentials as system:anonymous instead of refusing them (401)")
    .option("--enable-bootstrap-token-auth", "bootstrap tokens (`<id>.<secret>`, kept as Secrets bootstrap-token-<id> of type bootstrap.<domain>/token in kube-system, platform-system under the product's names) authenticate as system:bootstrap:<id>")
    .option("--authentication-config <file>", "AuthenticationConfiguration file: JWT issuers (OIDC) and anonymous access; reloaded on change (docs/authentication.md)")
    .option("--revocation-unavailable <deny|allow>", "client certificates while the revocation list cannot be read (docs/revocation.md)", "deny")
    .option("--data-dir <dir>", "directory of the store, the PKI and admin.conf", dataDir)

    .option("--encryption-provider-config <file>", "EncryptionConfiguration file: encrypt stored objects at rest (aescbc, aesgcm, secretbox, kms v2, identity)")
    .option("--encryption-provider-config-automatic-reload", "read the encryption configuration again when the file changes (a bad new file keeps the running one)");
  return addCaKeyKmsOption(serve, "the kms provider of the encryption configuration that wraps the CA key file (pki/ca.key): a copy of the data directory holds no usable CA key");
}

/** `--request-timeout`, `--min-request-timeout` and `--event-ttl`, as the server takes them. */
function timeFlags(flags: ServeFlags): { requestTimeoutMs: number; minRequestTimeoutSeconds: number; eventTtlSeconds: number } {
  const min = flags.minRequestTimeout;
  if (!/^\d{1,9}$/.test(min)) throw new UsageError(`expected \`--min-request-timeout\` to be whole seconds (0 or more), got ${JSON.stringify(min)}`);
  const requestTimeoutMs = durationFlagMs(flags.requestTimeout, "--request-timeout");
  if (requestTimeoutMs > MAX_REQUEST_TIMEOUT_MS) throw new UsageError(`expected \`--request-timeout\` to be at most 24h, got ${JSON.stringify(flags.requestTimeout)}`);
  return { requestTimeoutMs, minRequestTimeoutSeconds: Number(min), eventTtlSeconds: eventTtl(flags.eventTtl) };
}

/** Whole seconds of `--event-ttl` (upstream's duration syntax; "0" or "0s": Events never expire). */
function eventTtl(value: string): number {
  if (/^0+(s|m|h)?$/.test(value)) return 0;
  const ms = durationFlagMs(value, "--event-ttl");
  if (ms < 1000 || ms > MAX_EVENT_TTL_MS) throw new UsageError(`expected \`--event-ttl\` to be between 1s and 8760h, got ${JSON.stringify(value)}`);
  return Math.ceil(ms / 1000);
}

/** A year: far beyond any use of an Event, and within what etcd grants a lease. */
const MAX_EVENT_TTL_MS = 8760 * 3600_000;

/** `--encryption-provider-config-automatic-reload`, which needs the file it follows. */
function reloadFlag(flags: ServeFlags): boolean {
  if (flags.encryptionProviderConfigAutomaticReload && flags.encryptionProviderConfig === undefined) {
    throw new UsageError("--encryption-provider-config-automatic-reload needs --encryption-provider-config");
  }
  return flags.encryptionProviderConfigAutomaticReload === true;
}

/** Aborts `controller` on the first SIGTERM or SIGINT, so the process stops cleanly. */
export function abortOnSignals(controller: AbortController, logger: Logger): void {
  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopping");
    process.off("SIGTERM", stop);
    process.off("SIGINT", stop);
    controller.abort();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

/** Runs the HTTPS server with identity until a signal; `banner` picks what is printed at start. */
/** `localConnection`: also serve the data directory's unix-domain socket for co-located components (`up`'s controllers). */
export async function serveSecure(flags: ServeFlags, banner: "up" | "apiserver", logger: Logger, components: readonly Component[] = [], localConnection = false): Promise<void> {
  const listen = parseListen(flags.listen);
  checkGroupSuffix(flags.groupSuffix);
  const timeouts = timeFlags(flags);
  const whenRevocationsUnavailable = revocationUnavailable(flags.revocationUnavailable);
  const reload = reloadFlag(flags);
  const backend = await storageBackend(flags);
  // The configuration files before anything else: a bad one must fail with nothing bound or created.
  const auditSetup = await readAuditSetup(flags, flags.groupSuffix, logger);
  const admission = await readAdmissionSettings(flags, flags.groupSuffix, logger);
  const { tracing, tracer, egress } = await startTracingAndEgress(flags, flags.groupSuffix, "platform-ca-apiserver", logger);
  await checkAuthenticationConfig(flags, logger);
  const authorization = await readAuthorizationSettings(flags, flags.groupSuffix);
  // Loaded here, not at the top: fastify and SQLite would add ~0.25 s to every offline command's start.
  const { runSecureServer } = await import("../../apiserver/bootstrap/run-server.js");
  // The address first: a start that cannot listen must leave the data directory as it was.
  const held = await holdListenAddress(listen.host, listen.port);
  const sinks = auditSetup ? await openAuditSinks(auditSetup, flags, logger, egressDial(egress, "controlplane")).catch(async (err: unknown) => {
    await held.release();
    throw err;
  }) : undefined;
  const controller = new AbortController();
  abortOnSignals(controller, logger);
  // Every flag is checked above: from here on the held address is released whatever happens.
  await runSecureServer({
    dataDir: flags.dataDir,
    storageBackend: throughEgress(backend, egress),
    listen: { host: held.host, port: held.port },
    beforeListen: held.release,
    groupSuffix: flags.groupSuffix,
    ...timeouts,
    ...(flags.tokenFile !== undefined && { tokenFile: flags.tokenFile }),
    ...(flags.clientCaFile !== undefined && { clientCaFile: flags.clientCaFile }),
    ...(flags.encryptionProviderConfig !== undefined && { encryptionProviderConfig: flags.encryptionProviderConfig }),
    encryptionProviderConfigAutomaticReload: reload,
    ...(flags.caKeyKms !== undefined && { caKeyKms: flags.caKeyKms }),
    anonymous: flags.anonymousAuth === true,
    bootstrapTokens: flags.enableBootstrapTokenAuth === true,
    ...(flags.authenticationConfig !== undefined && { authenticationConfig: { path: flags.authenticationConfig, agentFor: issuerAgents(egress) } }),
    revocationUnavailable: whenRevocationsUnavailable,
    ...(auditSetup && sinks && { audit: { policy: auditSetup.policy, sink: sinks } }),
    admission: { ...admission, dial: egressDial(egress, "cluster") },
    ...(tracing && { tracing }),
    tracer,
    egress,
    ...(authorization && { authorization: { ...authorization, dial: egressDial(egress, "controlplane") } }),
    logger,
    signal: controller.signal,
    write: (text) => process.stdout.write(text),
    banner,
    components,
    localConnection,
  }).finally(async () => {
    await held.release();
    await closeSinks(sinks);
    await tracer.shutdown();
  });
}

/**
 * A JWT issuer's discovery and keys are fetched through the egress its `egressSelectorType` names (`controlplane` or
 * `cluster`, as upstream); without one, directly. One agent per selection, so connections are reused.
 */
function issuerAgents(egress: EgressSelector): (type: string | undefined) => HttpsAgent | undefined {
  const agents = new Map<string, HttpsAgent>();
  return (type) => {
    if (type !== "controlplane" && type !== "cluster") return undefined;
    let agent = agents.get(type);
    if (!agent) agents.set(type, (agent = egress.dialer(type).httpsAgent()));
    return agent;
  };
}

/**
 * Outbound webhooks dial through an egress selection, as upstream: audit and authorization through `controlplane`,
 * admission webhooks (they reach workloads) through `cluster`.
 */
function egressDial(egress: EgressSelector, selection: "controlplane" | "cluster"): Dialer {
  return (target, signal) => egress.dialer(selection).connect(target.host, target.port, signal ? { signal } : {});
}

/** Closes the audit sinks once the server stopped: the webhook sends what it still holds. */
async function closeSinks(sinks: readonly AuditSink[] | undefined): Promise<void> {
  await Promise.all((sinks ?? []).map((s) => s.close()));
}

/** Reads --authentication-config once before anything starts: a bad file fails the start with its field named. */
async function checkAuthenticationConfig(flags: ServeFlags, logger: Logger): Promise<void> {
  if (flags.authenticationConfig === undefined) return;
  const [{ loadAuthenticationConfig }, { DEFAULT_TOKEN_ISSUER }] = await Promise.all([import("../../config/authentication-config.js"), import("../../apiserver/bootstrap/auth.js")]);
  const loaded = await loadAuthenticationConfig(flags.authenticationConfig, { groupSuffix: flags.groupSuffix, anonymousFlagSet: flags.anonymousAuth === true, serviceAccountIssuer: DEFAULT_TOKEN_ISSUER });
  logger.info({ file: flags.authenticationConfig, issuers: loaded.jwt.map((j) => j.issuer.url) }, "authentication configuration loaded");
}

function revocationUnavailable(value: string | undefined): RevocationUnavailable {
  if (value === undefined || (REVOCATION_UNAVAILABLE as readonly string[]).includes(value)) return (value ?? "deny") as RevocationUnavailable;
  throw new UsageError(`--revocation-unavailable must be one of ${REVOCATION_UNAVAILABLE.join(", ")}, got ${JSON.stringify(value)}`);
}

/** The plain-HTTP development mode: loopback only, every request the local administrator. */
async function serveInsecureLocal(flags: ApiserverFlags, logger: Logger): Promise<void> {
  const listen = parseListen(flags.listen);
  checkGroupSuffix(flags.groupSuffix);
  if (!LOOPBACK.test(listen.host)) throw new UsageError(`--insecure-local serves only on loopback; got --listen ${flags.listen}`);
  const timeouts = timeFlags(flags);
  const backend = await storageBackend(flags);
  const ignored = (["tokenFile", "clientCaFile", "anonymousAuth", "enableBootstrapTokenAuth", "authenticationConfig", "authorizationConfig", "admissionControlConfigFile", "enableAdmissionPlugins", "disableAdmissionPlugins"] as const).filter((k) => flags[k] !== undefined);
  if (ignored.length > 0) throw new UsageError(`--insecure-local has no authentication and no admission chain, so ${ignored.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(", ")} cannot be used with it`);
  const reload = reloadFlag(flags);
  if (flags.caKeyKms !== undefined) throw new UsageError("--insecure-local keeps no CA, so --ca-key-kms cannot be used with it");
  const auditSetup = await readAuditSetup(flags, flags.groupSuffix, logger);
  const { tracer, egress } = await startTracingAndEgress(flags, flags.groupSuffix, "platform-ca-apiserver", logger);
  const [{ insecureLocalPipeline }, { createApiServer }, { loadEncryption, openDataStore }, { createSubjectAccessReviewHandler }] = await Promise.all([
    import("../../apiserver/pipeline.js"),
    import("../../apiserver/server.js"),
    import("../../apiserver/bootstrap/store.js"),
    import("../../apiserver/auth/subject-access-review.js"),
  ]);
  const encryption = await loadEncryption(flags.encryptionProviderConfig, flags.groupSuffix, logger);
  const held = await holdListenAddress(listen.host, listen.port);
  const sinks = auditSetup ? await openAuditSinks(auditSetup, flags, logger, egressDial(egress, "controlplane")).catch(async (err: unknown) => {
    await held.release();
    throw err;
  }) : undefined;
  const storage = await openDataStore(flags.dataDir, encryption, logger, { backend: throughEgress(backend, egress), ...(reload && { reload: { groupSuffix: flags.groupSuffix } }) }).catch(async (err: unknown) => {
    await held.release();
    await closeSinks(sinks);
    throw err;
  });
  const audit = auditSetup && sinks ? { audit: { policy: auditSetup.policy, sink: sinks } } : {};
  const server = createApiServer({ storage, pipeline: insecureLocalPipeline(logger), groupSuffix: flags.groupSuffix, logger, listen: { host: held.host, port: held.port }, insecure: true, ...timeouts, ...audit, tracer, egress });
  // Authorization is off, so every access review is allowed (upstream's AlwaysAllow answers the same): a controller
  // beside this server then approves node-agent CSRs instead of failing its SubjectAccessReview.
  const allowAll = { authorize: () => ({ allowed: true, reason: "insecure-local: authorization is off", evaluationErrors: [] }) };
  server.registerCreateHandler(server.names.authorization, "subjectaccessreviews", createSubjectAccessReviewHandler(allowAll));
  try {
    await held.release();
    await server.start();
  } catch (err) {
    await storage.close();
    throw err;
  }
  process.stdout.write(`API server listening on ${server.address}\n`);
  const controller = new AbortController();
  abortOnSignals(controller, logger);
  await new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve(), { once: true }));
  await server.stop();
  await storage.close();
  await closeSinks(sinks);
  await tracer.shutdown();
}

export const apiserverCommand = (program: Command): void => {
  const command = program.command("apiserver").description("run the embedded API server (HTTPS, client certificates and tokens, RBAC) on durable storage in a data directory");
  addServeOptions(command)
    .addHelpText("after", "\nExamples:\n  platform-ca apiserver --data-dir /var/lib/platform-ca --listen 0.0.0.0:6443 --token-file tokens.csv\n  platform-ca apiserver --data-dir ./dev --insecure-local --listen 127.0.0.1:8080\n")
    .option("--insecure-local", "plain HTTP on loopback, every request treated as a local administrator (development only)")
    .action(async (flags: ApiserverFlags) => {
      if (!flags.dataDir) throw new UsageError("--data-dir is required");
      applyLogFlags(flags);
      const logger = createLogger({ name: "apiserver" });
      if (flags.insecureLocal) return serveInsecureLocal(flags, logger);
      return serveSecure(flags, "apiserver", logger);
    });
};
