// Request credentials: a static or file-backed bearer token, basic authentication, or an exec plugin.
import { Buffer } from "node:buffer";
import { readFile, stat } from "node:fs/promises";
import { PlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { systemClock, type Clock } from "../time/clock.js";
import { ExecPlugin, execClusterInfo } from "./exec-plugin.js";
import type { RestConfig } from "./rest-config.js";

/** What one request presents: an Authorization header and/or a client certificate from a plugin. */
export interface AuthMaterial {
  readonly authorization?: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface CredentialSource {
  get(signal?: AbortSignal): Promise<AuthMaterial>;
  /** Forgets cached material after a 401; true when asking again may give something new. */
  invalidate(): boolean;
}

export interface CredentialOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Whether standard input is a terminal (exec plugins' `spec.interactive`); default process.stdin.isTTY. */
  readonly stdinIsTty?: boolean;
  /** Environment the exec plugin inherits (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Longest run of an exec plugin (default 5 minutes; interactive logins take a while). */
  readonly execTimeoutMs?: number;
}

const fixed = (material: AuthMaterial): CredentialSource => ({ get: async () => material, invalidate: () => false });

export function createCredentialSource(config: RestConfig, options: CredentialOptions = {}): CredentialSource {
  const c = config.credentials;
  switch (c.type) {
    case "none":
      return fixed({});
    case "token":
      return fixed({ authorization: `Bearer ${c.token}` });
    case "basic":
      return fixed({ authorization: `Basic ${Buffer.from(`${c.username}:${c.password}`, "utf8").toString("base64")}` });
    case "token-file":
      return new TokenFile(c.path);
    case "exec":
      return new ExecPlugin({
        exec: c.exec,
        cluster: c.exec.provideClusterInfo ? execClusterInfo(config) : undefined,
        clock: options.clock ?? systemClock,
        logger: options.logger ?? silentLogger(),
        stdinIsTty: options.stdinIsTty ?? process.stdin.isTTY === true,
        env: options.env ?? process.env,
        timeoutMs: options.execTimeoutMs,
      });
  }
}

/** A token file (a rotated service-account token): re-read whenever its size, time or inode changes. */
export class TokenFile implements CredentialSource {
  readonly #path: string;
  #stamp = "";
  #token: string | undefined;

  constructor(path: string) {
    this.#path = path;
  }

  async get(): Promise<AuthMaterial> {
    try {
      const s = await stat(this.#path);
      const stamp = `${s.ino}:${s.size}:${s.mtimeMs}`;
      if (stamp !== this.#stamp || this.#token === undefined) {
        this.#token = (await readFile(this.#path, "utf8")).trim();
        this.#stamp = stamp;
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new PlatformError("CREDENTIALS_UNAVAILABLE", `cannot read the token file ${this.#path} (${code})`, { cause: err });
    }
    if (this.#token === "") throw new PlatformError("CREDENTIALS_UNAVAILABLE", `the token file ${this.#path} is empty`);
    return { authorization: `Bearer ${this.#token}` };
  }

  invalidate(): boolean {
    this.#stamp = "";
    return true;
  }
}
