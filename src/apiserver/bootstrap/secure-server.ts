// The API server secure by default: data-directory PKI, HTTPS with client certificates, identity, RBAC, admin.conf.
import { join } from "node:path";
import type { Server as TlsServer } from "node:tls";
import { groupNames, DEFAULT_GROUP_SUFFIX, type GroupNames } from "../../api/group.js";
import { invalidOption, PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { CaSource } from "../../pki/ca-source.js";
import { readClientCaFile } from "../../pki/client-ca-file.js";
import { createApiserverClientSigner } from "../../../signers/apiserver-client.js";
import { createApiServer, type ApiServer, type ApiServerOptions } from "../server.js";
import { systemClock, type Clock } from "../../time/clock.js";
import type { Storage } from "../storage/types.js";
import { ADMIN_CONFIG_FILE, ensureAdminConfig, type AdminConfigResult } from "./admin-config.js";
import { loadCredentialFile, type CredentialEntry } from "../auth/authn-token-file.js";
import type { RevocationUnavailable } from "../auth/revocation-list.js";
import { createSecureAuth, type AdmissionSettings, type AuthenticationConfigSettings, type AuthorizationSettings, type SecureAuth } from "./auth.js";
import { bootstrapPki, PKI_DIR, type DataDirPki } from "./pki.js";

export interface SecureServerOptions {
  readonly dataDir: string;
  readonly storage: Storage;
  readonly listen: { readonly host: string; readonly port: number };
  readonly groupSuffix?: string;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Static bearer tokens (`token,user,uid,"groups"`). */
  readonly tokenFile?: string;
  /** Extra CA certificates trusted for client certificates, beside the cluster CA (e.g. the previous CA while rotating). */
  readonly clientCaFile?: string;
  /** Requests without credentials run as system:anonymous instead of getting a 401. */
  readonly anonymous?: boolean;
  /** Bootstrap token Secrets authenticate node agents (`--enable-bootstrap-token-auth`). */
  readonly bootstrapTokens?: boolean;
  /** Client certificates while the revocation list cannot be read: "deny" (default) or "allow". */
  readonly revocationUnavailable?: RevocationUnavailable;
  /** How often ca.crt is checked for a rotated CA; default 30 s, 0 turns it off. */
  readonly caPollMs?: number;
  /**
   * The token file and client CA file already read by readSecureInputs (a process reads them before it touches the
   * data directory); without it, start() reads them before anything else.
   */
  readonly inputs?: SecureInputs;
  /**
   * Called right before the server listens: a process that bound the address before creating anything (so a taken
   * port fails first) frees it here.
   */
  readonly beforeListen?: () => Promise<void>;
  /** Audit of requests: the policy (already checked) and where events go. */
  readonly audit?: ApiServerOptions["audit"];
  /** --request-timeout and --min-request-timeout (the server's defaults without them). */
  readonly requestTimeoutMs?: number;
  readonly minRequestTimeoutSeconds?: number;
  /** --event-ttl in seconds (the server's default, an hour, without it). */
  readonly eventTtlSeconds?: number;
  /** Admission plugins and their configurations (`--admission-control-config-file` and the plugin flags). */
  readonly admission?: AdmissionSettings;
  readonly tracer?: ApiServerOptions["tracer"];
  readonly egress?: ApiServerOptions["egress"];
  /** The AuthenticationConfiguration file (`--authentication-config`), reloaded on change. */
  readonly authenticationConfig?: AuthenticationConfigSettings;
  /** `--authorization-config`: the authorizer chain, already checked. */
  readonly authorization?: AuthorizationSettings;
}

/** What the input files of a secure server hold, read and checked before the data directory is used. */
export interface SecureInputs {
  readonly tokens?: readonly CredentialEntry[];
  readonly clientCas: readonly string[];
}

/** Reads and checks `tokenFile` and `clientCaFile`: a bad one fails here, before any state is created. */
export async function readSecureInputs(o: Pick<SecureServerOptions, "tokenFile" | "clientCaFile">): Promise<SecureInputs> {
  const [tokens, clientCas] = await Promise.all([o.tokenFile !== undefined ? loadCredentialFile(o.tokenFile) : undefined, readClientCaFile(o.clientCaFile)]);
  return { ...(tokens !== undefined && { tokens }), clientCas };
}

/** What a started secure server tells its owner. */
export interface SecureServerState {
  readonly server: ApiServer;
  readonly pki: DataDirPki;
  readonly adminConfig: AdminConfigResult;
}

export interface SecureServer {
  readonly names: GroupNames;
  /** The identity layer (ServiceAccount tokens, authorizer): available at once, loaded by start(). */
  readonly auth: SecureAuth;
  start(signal?: AbortSignal): Promise<SecureServerState>;
  stop(): Promise<void>;
}

/** The address clients use: a wildcard listen address is reached through loopback. */
export function clientAddress(address: string): string {
  return address.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:");
}

export function createSecureServer(options: SecureServerOptions): SecureServer {
  if (typeof options?.dataDir !== "string" || options.dataDir === "") throw invalidOption("dataDir", "to be a directory path", options?.dataDir);
  if (!options.storage) throw invalidOption("storage", "to be a Storage", options.storage);
  if (typeof options.listen?.host !== "string" || !Number.isInteger(options.listen.port)) throw invalidOption("listen", "to be { host, port }", options.listen);
  const pollMs = options.caPollMs ?? 30_000;
  if (!Number.isInteger(pollMs) || pollMs < 0) throw invalidOption("caPollMs", "to be an integer ≥ 0", pollMs);
  const suffix = options.groupSuffix ?? DEFAULT_GROUP_SUFFIX;
  let names: GroupNames;
  try {
    names = groupNames(suffix);
  } catch {
    throw invalidOption("groupSuffix", "to be a DNS name with at least two labels", suffix);
  }
  const logger = options.logger ?? silentLogger();
  const clock = options.clock ?? systemClock;
  const now = () => new Date(clock.now());
  let extraClientCas: readonly string[] = [];
  let clientSigner: ReturnType<typeof createApiserverClientSigner> | undefined;
  // Client certificates are trusted when the apiserver-client signer issued them: its CA(s), the CA it replaced while
  // that is still valid (certificates from before a rotation keep working), and the extra file.
  const clusterCas = () => {
    const t = clock.now();
    const replaced = (caSource?.history() ?? []).filter((h) => h.ca.notAfter.getTime() > t).map((h) => h.ca.certPem);
    return [...new Set([...(clientSigner?.trustAnchors() ?? []), ...replaced])];
  };
  const clientCaPool = () => clusterCas().concat(extraClientCas);
  const auth = createSecureAuth({
    storage: options.storage,
    names,
    clock,
    logger,
    keyDir: join(options.dataDir, PKI_DIR),
    clientCaPool,
    anonymous: options.anonymous === true,
    bootstrapTokens: options.bootstrapTokens === true,
    ...(options.revocationUnavailable && { revocationUnavailable: options.revocationUnavailable }),
    ...(options.admission && { admission: options.admission }),
    ...(options.authenticationConfig && { authenticationConfig: options.authenticationConfig }),
    ...(options.authorization && { authorization: options.authorization }),
  });
  let caSource: CaSource | undefined;
  let server: ApiServer | undefined;

  const stop = async () => {
    await server?.stop();
    auth.stop();
    caSource?.stop();
  };
  return {
    names,
    auth,
    async start(signal) {
      const inputs = options.inputs ?? (await readSecureInputs(options));
      const pki = await bootstrapPki({ dataDir: options.dataDir, listenHost: options.listen.host, now, logger });
      extraClientCas = inputs.clientCas;
      // After a rotation the TLS layer advertises the new client CA list, so clients pick a matching certificate.
      const advertise = () => (server?.app.server as TlsServer | undefined)?.setSecureContext({ key: pki.serving.keyPem, cert: pki.serving.certPem, ca: clientCaPool().join("") });
      caSource = new CaSource({ ...pki.caFiles, intermediates: true, clock: now, logger, pollIntervalMs: pollMs, onChange: () => advertise() });
      await caSource.start(signal);
      if (caSource.lastError) throw caSource.lastError;
      clientSigner = createApiserverClientSigner({ ca: caSource, groupSuffix: suffix, now, logger });
      await auth.load(inputs.tokens);
      server = createApiServer({
        storage: options.storage,
        pipeline: auth.pipeline,
        groupSuffix: suffix,
        logger,
        clock,
        listen: options.listen,
        ...(options.requestTimeoutMs !== undefined && { requestTimeoutMs: options.requestTimeoutMs }),
        ...(options.minRequestTimeoutSeconds !== undefined && { minRequestTimeoutSeconds: options.minRequestTimeoutSeconds }),
        ...(options.eventTtlSeconds !== undefined && { eventTtlSeconds: options.eventTtlSeconds }),
        ...(options.audit && { audit: options.audit }),
        ...(options.tracer && { tracer: options.tracer }),
        ...(options.egress && { egress: options.egress }),
        // Certificates are asked for but not required: token clients connect without one, and a presented chain is
        // verified by the X509 authenticator (which also follows a rotated CA), not by the TLS layer.
        tls: { key: pki.serving.keyPem, cert: pki.serving.certPem, ca: clientCaPool().join(""), requestCert: true },
        // Every certificate the server holds, for the expiry gauges of /metrics.
        certificates: () => [
          ...clusterCas().map((pem) => ({ usage: "ca", name: "cluster-ca", pem })),
          ...extraClientCas.map((pem) => ({ usage: "client-ca", name: "client-ca-file", pem })),
          { usage: "serving", name: "apiserver", pem: pki.serving.certPem },
        ],
      });
      auth.attach(server);
      try {
        await auth.start(signal);
        await options.beforeListen?.();
        await server.start(signal);
        const adminConfig = await ensureAdminConfig({ path: join(options.dataDir, ADMIN_CONFIG_FILE), server: clientAddress(server.address), ca: pki.ca, now, logger });
        signal?.addEventListener("abort", () => void stop(), { once: true });
        return { server, pki, adminConfig };
      } catch (err) {
        await stop();
        throw err;
      }
    },
    stop,
  };
}
