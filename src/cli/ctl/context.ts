// What a platformctl command works with: merged flags, the REST client, discovery, output streams and server warnings.
import type { Command } from "commander";
import type { GroupNames } from "../../api/group.js";
import { createClient, defaultUserAgent, restConfigFromFlags, type RestClient, type RestConfig } from "../../client/index.js";
import { PlatformError } from "../../errors.js";
import { VERSION } from "../../version.js";
import { groupNamesFlag } from "../program.js";
import { configEnv, configFlag, withConfigHint } from "./client-config.js";
import { Discovery } from "./discovery.js";
import { globalFlags, type GlobalFlags } from "./global-options.js";

/** platformctl talks faster than a controller: discovery alone is a dozen requests. */
const CTL_QPS = 50;
const CTL_BURST = 100;

export interface CtlIo {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: CtlIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

export class CtlContext {
  readonly names: GroupNames;
  #config: Promise<RestConfig> | undefined;
  #client: Promise<RestClient> | undefined;
  #discovery: Promise<Discovery> | undefined;
  #warnings = 0;

  constructor(
    readonly flags: GlobalFlags,
    readonly io: CtlIo = processIo,
    readonly env: Readonly<Record<string, string | undefined>> = process.env,
  ) {
    this.names = groupNamesFlag(flags.groupSuffix);
  }

  /** The client version this run reports (`--version=vX.Y.Z` overrides it). */
  get clientVersion(): string {
    return this.flags.version?.startsWith("v") ? this.flags.version : `v${VERSION}`;
  }

  restConfig(): Promise<RestConfig> {
    this.#config ??= restConfigFromFlags({ ...this.flags, platformconfig: configFlag(this.flags) }, configEnv(this.env), {
      groupSuffix: this.names.suffix,
      userAgent: defaultUserAgent("platformctl"),
      qps: CTL_QPS,
      burst: CTL_BURST,
    }).catch((err: unknown) => Promise.reject(withConfigHint(err)));
    return this.#config;
  }

  /** The namespace of namespaced calls: -n, else the context's, else `default`. */
  async namespace(): Promise<string> {
    return (await this.restConfig()).namespace;
  }

  client(): Promise<RestClient> {
    this.#client ??= (async () => {
      const client = createClient(await this.restConfig(), {
        groupSuffix: this.names.suffix,
        // A server that cannot be reached is reported at once, as kubectl does, not after ~3 s of retries.
        retry: { unreachable: false },
        onWarning: (warning) => {
          this.#warnings++;
          this.io.err(`Warning: ${warning}\n`);
        },
      });
      if (this.flags.matchServerVersion) await this.#matchServerVersion(client);
      return client;
    })();
    return this.#client;
  }

  discovery(): Promise<Discovery> {
    this.#discovery ??= this.client().then((client) => new Discovery({ client, cacheDir: this.flags.cacheDir }));
    return this.#discovery;
  }

  async #matchServerVersion(client: RestClient): Promise<void> {
    const info = await client.request<{ gitVersion?: string; platformCaVersion?: string }>("GET", "/version");
    const server = info.platformCaVersion ? `v${info.platformCaVersion.replace(/^v/, "")}` : (info.gitVersion ?? "unknown");
    if (server !== this.clientVersion) {
      throw new PlatformError("INVALID_ARGUMENT", `server version (${server}) differs from client version (${this.clientVersion}); --match-server-version requires them to be equal`);
    }
  }

  /** Ends the command: with --warnings-as-errors any server warning fails it. */
  finish(): void {
    if (this.flags.warningsAsErrors && this.#warnings > 0) {
      throw new PlatformError("INVALID_ARGUMENT", `${this.#warnings} warning${this.#warnings === 1 ? "" : "s"} received and --warnings-as-errors is set`);
    }
  }

  close(): void {
    void this.#client?.then((c) => c.close(), () => undefined);
  }
}

/** Runs a command body with its context, then applies --warnings-as-errors and releases the client. */
export async function withContext(cmd: Command, body: (ctx: CtlContext) => Promise<void>): Promise<void> {
  const ctx = new CtlContext(globalFlags(cmd));
  try {
    await body(ctx);
    ctx.finish();
  } finally {
    ctx.close();
  }
}
