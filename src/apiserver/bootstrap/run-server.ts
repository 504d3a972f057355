// Runs the secure API server as a process: durable storage, start, the banner, extra components, a clean stop on abort.
import { join } from "node:path";
import type { GroupNames } from "../../api/group.js";
import { toPlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { openSqliteStorage } from "../storage/sqlite.js";
import { ADMIN_GROUP, ADMIN_USER } from "./admin-config.js";
import { clientAddress, createSecureServer, type SecureServerOptions, type SecureServerState } from "./secure-server.js";

export const STORE_FILE = "store.db";

/** What a component started beside the server is given. */
export interface ComponentContext {
  /** `<data-dir>/admin.conf`: a kubeconfig with a system:masters client certificate for this server. */
  readonly adminConfigPath: string;
  readonly dataDir: string;
  readonly names: GroupNames;
  /** The cluster CA the built-in signers issue with. */
  readonly caFiles: { readonly certFile: string; readonly keyFile: string };
  readonly logger: Logger;
  /** Aborted when the process stops. */
  readonly signal: AbortSignal;
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
  /** `up` prints the full banner; `apiserver` only the address and how to connect. */
  readonly banner: "up" | "apiserver";
  readonly components?: readonly Component[];
}

/** The lines printed at start: where the server is and the kubectl (and platformctl) command lines for admin.conf. */
export function bannerText(state: SecureServerState, o: Pick<RunOptions, "dataDir" | "banner" | "components">, summaries: readonly string[] = []): string {
  const address = clientAddress(state.server.address);
  const conf = state.adminConfig.path;
  const lines = [
    ...(o.banner === "up" ? ["platform-ca is up", `  API server   ${address} (group suffix ${state.server.names.suffix})`, `  data         ${o.dataDir} (${STORE_FILE}, pki/, admin.conf)`] : []),
    ...(o.banner === "up" && o.components?.length ? [`  components   ${o.components.map((c) => c.name).join(", ")}`] : []),
    ...(o.banner === "up" ? summaries.map((s) => `  ${s}`) : []),
    `  admin.conf   ${conf} (user ${ADMIN_USER}, group ${ADMIN_GROUP}, valid until ${state.adminConfig.notAfter.toISOString()})`,
    "",
    `  kubectl --kubeconfig ${conf} get csr`,
    `  platformctl --platformconfig ${conf} get csr`,
    "",
    `API server listening on ${address}`,
  ];
  return `${lines.join("\n")}\n`;
}

/** Starts storage, the server and the components; resolves after `signal` aborts and everything has stopped. */
export async function runSecureServer(o: RunOptions): Promise<void> {
  const { logger } = o;
  const storage = await openSqliteStorage({ path: join(o.dataDir, STORE_FILE), logger });
  const secure = createSecureServer({ ...o, storage, logger });
  const stops: { name: string; stop(): Promise<void> }[] = [];
  const summaries: string[] = [];
  try {
    const state = await secure.start();
    const context: ComponentContext = {
      adminConfigPath: state.adminConfig.path,
      dataDir: o.dataDir,
      names: secure.names,
      caFiles: state.pki.caFiles,
      logger,
      signal: o.signal,
    };
    for (const component of o.components ?? []) {
      const started = await component.start(context);
      if (started) stops.push({ name: component.name, stop: () => started.stop() });
      if (started?.summary) summaries.push(started.summary);
      logger.info({ component: component.name }, "component started");
    }
    // Printed once everything runs: the last line (the address) tells scripts the process is ready.
    o.write(bannerText(state, o, summaries));
    if (!o.signal.aborted) await new Promise<void>((resolve) => o.signal.addEventListener("abort", () => resolve(), { once: true }));
  } finally {
    for (const c of stops.reverse()) {
      await c.stop().catch((err: unknown) => logger.error({ err: toPlatformError(err), component: c.name }, "component did not stop cleanly"));
    }
    await secure.stop();
    await storage.close();
  }
}
