// Runs the secure API server as a process: durable storage, start, the banner, extra components, a clean stop on abort.
import type { GroupNames } from "../../api/group.js";
import { toPlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { TracingConfig } from "../../config/tracing-config.js";
import { STORE_FILE, loadEncryption, openDataStore, type StorageBackend } from "./store.js";
import { useCaKeyKms } from "../encryption/kms-key-wrapper.js";
import { ADMIN_GROUP, ADMIN_USER } from "./admin-config.js";
import { clientAddress, createSecureServer, readSecureInputs, type SecureServerOptions, type SecureServerState } from "./secure-server.js";
import { newLocalConnection, serveLocalSocket, type LocalConnection } from "./local-socket.js";
import { serveLocalChannels, type LocalChannels } from "./local-channel.js";
import type { MessagePort } from "node:worker_threads";

export { STORE_FILE };

/** What a component started beside the server is given. */
export interface ComponentContext {
  /** `<data-dir>/admin.conf`: a kubeconfig with a system:masters client certificate for this server. */
  readonly adminConfigPath: string;
  /** `https://host:port` the server listens on, as bound (`0.0.0.0` when on every interface). */
  readonly address: string;
  readonly dataDir: string;
  readonly names: GroupNames;
  /** The cluster CA the built-in signers issue with. */
  readonly caFiles: { readonly certFile: string; readonly keyFile: string };
  /** The store is shared with other API server replicas (etcd): controllers beside each must elect a leader. */
  readonly replicated: boolean;
  readonly logger: Logger;
  /** Aborted when the process stops. */
  readonly signal: AbortSignal;
  /** The tracing file's settings (`--tracing-config-file`), for a component to trace with too. */
  readonly tracing?: TracingConfig;
  /** The server's unix-domain socket and the controller identity's token, when RunOptions.localConnection asked for them. */
  readonly local?: LocalConnection;
  /** With `local`: opens an in-thread channel to this server (the port to transfer to the thread that uses it). */
  readonly openChannel?: () => MessagePort;
}

/** Something that runs beside the API server (the controllers), started once the server serves. */
export interface Component {
  readonly name: string;
  /**
   * Resolves once running; the returned stop() is awaited at shutdown, in reverse start order. A summary is a
   * banner line (where the component can be reached).
   */
  start(context: ComponentContext): Promise<{ stop(): Promise<void>; readonly summary?: string } | void>;
}

export interface RunOptions extends Omit<SecureServerOptions, "storage" | "logger"> {
  readonly logger: Logger;
  /** Stops everything when aborted; runSecureServer resolves after that. */
  readonly signal: AbortSignal;
  /** Where the banner goes (stdout). */
  readonly write: (text: string) => void;
  /** The banner's header line: `platform-ca is up` or `platform-ca apiserver is up`. */
  readonly banner: "up" | "apiserver";
  readonly components?: readonly Component[];
  /** EncryptionConfiguration file (`--encryption-provider-config`): encryption at rest. */
  readonly encryptionProviderConfig?: string;
  /** `--encryption-provider-config-automatic-reload`: follow changes of that file while serving. */
  readonly encryptionProviderConfigAutomaticReload?: boolean;
  /** `--ca-key-kms`: the KMS provider of that configuration that wraps the CA key file. */
  readonly caKeyKms?: string;
  readonly tracing?: TracingConfig;
  /** SQLite in the data directory (default) or etcd. */
  readonly storageBackend?: StorageBackend;
  /** Also serve a unix-domain socket in the data directory and in-thread channels for co-located components (local-socket.ts, local-channel.ts). */
  readonly localConnection?: boolean;
}

/**
 * The lines printed at start: a header (what runs, where it listens, where its data is), then admin.conf and the
 * kubectl (and platformctl) command lines for it. The address shown is the one bound; when that is a wildcard
 * (0.0.0.0, [::]) admin.conf reaches it through loopback, and the banner says so.
 */
export function bannerText(state: SecureServerState, o: Pick<RunOptions, "dataDir" | "banner" | "components" | "storageBackend">, summaries: readonly string[] = []): string {
  const etcd = o.storageBackend?.kind === "etcd3" ? o.storageBackend.etcd : undefined;
  const bound = state.server.address;
  const client = clientAddress(bound);
  const everywhere = client !== bound;
  const conf = state.adminConfig.path;
  const lines = [
    o.banner === "up" ? "platform-ca is up" : "platform-ca apiserver is up",
    `  API server   ${bound}${everywhere ? ", every interface" : ""} (group suffix ${state.server.names.suffix})`,
    etcd ? `  data         ${o.dataDir} (pki/, admin.conf); objects in etcd ${etcd.endpoints.join(",")} under ${etcd.prefix ?? "/platform-ca"}` : `  data         ${o.dataDir} (${STORE_FILE}, pki/, admin.conf)`,
    ...(o.components?.length ? [`  components   ${o.components.map((c) => c.name).join(", ")}`] : []),
    ...summaries.map((s) => `  ${s}`),
    `  admin.conf   ${conf} (${everywhere ? `server ${client}, ` : ""}user ${ADMIN_USER}, group ${ADMIN_GROUP}, valid until ${state.adminConfig.notAfter.toISOString()})`,
    "",
    `  kubectl --kubeconfig ${conf} get csr`,
    // `npx` finds the package's own bin in a clone (no global install): what a first user has.
    `  npx platformctl --platformconfig ${conf} get csr   (platformctl, where installed)`,
    "",
    `API server listening on ${bound}${everywhere ? ` (every interface; admin.conf connects through ${client})` : ""}`,
  ];
  return `${lines.join("\n")}\n`;
}

/** Starts storage, the server and the components; resolves after `signal` aborts and everything has stopped. */
export async function runSecureServer(o: RunOptions): Promise<void> {
  const { logger } = o;
  // The input files first: a missing or malformed one must fail before the data directory is created or changed.
  const read = o.inputs ?? (await readSecureInputs(o));
  const local = o.localConnection ? newLocalConnection(o.dataDir) : undefined;
  if (o.localConnection && !local) logger.warn({ dataDir: o.dataDir }, "the data directory's path is too long for a unix-domain socket; the controllers use HTTPS on loopback");
  const inputs = local ? { ...read, tokens: [...(read.tokens ?? []), local.credential] } : read;
  const encryption = await loadEncryption(o.encryptionProviderConfig, o.groupSuffix, logger);
  // Before the PKI is read or created: the CA key is unwrapped (or written) through it.
  if (o.caKeyKms !== undefined) useCaKeyKms(o.caKeyKms, encryption);
  const storage = await openDataStore(o.dataDir, encryption, logger, { ...(o.storageBackend && { backend: o.storageBackend }), ...(o.encryptionProviderConfigAutomaticReload && { reload: { ...(o.groupSuffix !== undefined && { groupSuffix: o.groupSuffix }) } }) });
  let secure: ReturnType<typeof createSecureServer>;
  try {
    secure = createSecureServer({ ...o, storage, logger, inputs });
  } catch (err) {
    await storage.close();
    throw err;
  }
  const stops: { name: string; stop(): Promise<void> }[] = [];
  const summaries: string[] = [];
  try {
    const state = await secure.start();
    let channels: LocalChannels | undefined;
    if (local) {
      const socket = await serveLocalSocket(state.server.app, local.connection.socketPath, logger);
      stops.push({ name: "local-socket", stop: () => socket.close() });
      channels = serveLocalChannels(state.server.app.server, logger);
      const opened = channels;
      stops.push({ name: "local-channels", stop: async () => opened.close() });
    }
    const context: ComponentContext = {
      adminConfigPath: state.adminConfig.path,
      address: state.server.address,
      dataDir: o.dataDir,
      names: secure.names,
      caFiles: state.pki.caFiles,
      replicated: o.storageBackend?.kind === "etcd3",
      logger,
      signal: o.signal,
      ...(o.tracing && { tracing: o.tracing }),
      ...(local && { local: local.connection }),
      ...(channels && { openChannel: channels.open }),
    };
    for (const component of o.components ?? []) {
      const started = await component.start(context);
      if (started) stops.push({ name: component.name, stop: () => started.stop() });
      if (started?.summary) summaries.push(started.summary);
      logger.info({ subsystem: component.name }, "component started");
    }
    // Printed once everything runs: the last line (the address) tells scripts the process is ready.
    o.write(bannerText(state, o, summaries));
    if (!o.signal.aborted) await new Promise<void>((resolve) => o.signal.addEventListener("abort", () => resolve(), { once: true }));
  } finally {
    for (const c of stops.reverse()) {
      await c.stop().catch((err: unknown) => logger.error({ err: toPlatformError(err), subsystem: c.name }, "component did not stop cleanly"));
    }
    await secure.stop();
    await storage.close();
  }
}
