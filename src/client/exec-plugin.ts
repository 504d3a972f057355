// Exec credential plugins: run the configured command, hand it an ExecCredential, cache what it prints until expiry.
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { isPlatformError, PlatformError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Clock } from "../time/clock.js";
import type { AuthMaterial, CredentialSource } from "./credentials.js";
import type { ExecConfig, RestConfig } from "./rest-config.js";
import { checkClientPair } from "./tls-material.js";

export const EXEC_INFO_ENV = "PLATFORM_EXEC_INFO";
const DEFAULT_TIMEOUT_MS = 5 * 60_000;
const STDOUT_LIMIT = 1024 * 1024;
const STDERR_TAIL = 2048;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** `spec.cluster` of the ExecCredential (CA data travels base64-encoded, as []byte does in JSON). */
export interface ExecClusterInfo {
  readonly server: string;
  readonly "tls-server-name"?: string;
  readonly "insecure-skip-tls-verify"?: boolean;
  readonly "certificate-authority-data"?: string;
  readonly "proxy-url"?: string;
  readonly "disable-compression"?: boolean;
  readonly config?: unknown;
}

export function execClusterInfo(config: RestConfig): ExecClusterInfo {
  const clusterConfig = config.credentials.type === "exec" ? config.credentials.exec.clusterConfig : undefined;
  return {
    server: config.server,
    ...(config.tls.serverName ? { "tls-server-name": config.tls.serverName } : {}),
    ...(config.tls.insecureSkipVerify ? { "insecure-skip-tls-verify": true } : {}),
    ...(config.tls.ca ? { "certificate-authority-data": Buffer.from(config.tls.ca, "utf8").toString("base64") } : {}),
    ...(config.proxyUrl ? { "proxy-url": config.proxyUrl } : {}),
    ...(config.disableCompression ? { "disable-compression": true } : {}),
    ...(clusterConfig !== undefined ? { config: clusterConfig } : {}),
  };
}

export interface ExecPluginOptions {
  readonly exec: ExecConfig;
  readonly cluster?: ExecClusterInfo;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly stdinIsTty: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly timeoutMs?: number;
}

interface Cached {
  readonly material: AuthMaterial;
  readonly expiresAt?: number;
}

export class ExecPlugin implements CredentialSource {
  readonly #o: ExecPluginOptions;
  #cached: Cached | undefined;
  #running: Promise<Cached> | undefined;
  #runs = 0;

  constructor(options: ExecPluginOptions) {
    this.#o = options;
  }

  async get(): Promise<AuthMaterial> {
    const cached = this.#cached;
    if (cached && (cached.expiresAt === undefined || this.#o.clock.now() < cached.expiresAt)) return cached.material;
    // Concurrent requests share one run of the plugin.
    this.#running ??= this.#run().finally(() => (this.#running = undefined));
    this.#cached = await this.#running;
    return this.#cached.material;
  }

  /** How many times the plugin ran (for metrics and tests of the cache). */
  get runs(): number {
    return this.#runs;
  }

  invalidate(): boolean {
    this.#cached = undefined;
    return true;
  }

  /** The ExecCredential passed in PLATFORM_EXEC_INFO. */
  input(interactive: boolean): object {
    const { exec, cluster } = this.#o;
    return { apiVersion: exec.apiVersion, kind: "ExecCredential", spec: { interactive, ...(cluster ? { cluster } : {}) } };
  }

  #fail(message: string, retryable = false, cause?: unknown): PlatformError {
    return new PlatformError("CREDENTIALS_UNAVAILABLE", `exec plugin ${JSON.stringify(this.#o.exec.command)} ${message}`, { retryable, cause });
  }

  async #run(): Promise<Cached> {
    const { exec, clock, logger } = this.#o;
    if (exec.interactiveMode === "Always" && !this.#o.stdinIsTty) {
      throw this.#fail("needs an interactive terminal (interactiveMode: Always), but standard input is not a terminal");
    }
    const interactive = exec.interactiveMode !== "Never" && this.#o.stdinIsTty;
    const env: Record<string, string | undefined> = { ...this.#o.env };
    for (const e of exec.env) env[e.name] = e.value;
    env[EXEC_INFO_ENV] = JSON.stringify(this.input(interactive));
    this.#runs++;
    logger.debug({ command: exec.command, interactive }, "running exec credential plugin");
    const { stdout, stderr, exit } = await new Promise<{ stdout: string; stderr: string; exit: number | string }>((resolve, reject) => {
      const child = spawn(exec.command, [...exec.args], { env, stdio: [interactive ? "inherit" : "ignore", "pipe", "pipe"] });
      const out: Buffer[] = [];
      let outBytes = 0;
      let err = "";
      let settled = false;
      const cancelTimer = clock.setTimer(this.#o.timeoutMs ?? DEFAULT_TIMEOUT_MS, () => {
        child.kill("SIGKILL");
        finish(() => reject(this.#fail(`did not finish within ${Math.round((this.#o.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000)}s`, true)));
      });
      const finish = (then: () => void) => {
        if (settled) return;
        settled = true;
        cancelTimer();
        then();
      };
      child.stdout.on("data", (chunk: Buffer) => {
        outBytes += chunk.length;
        if (outBytes <= STDOUT_LIMIT) out.push(chunk);
      });
      child.stderr.on("data", (chunk: Buffer) => {
        // Prompts of an interactive login go to the user's terminal; a tail is kept for error messages.
        if (interactive) process.stderr.write(chunk);
        err = (err + chunk.toString("utf8")).slice(-STDERR_TAIL - 1);
      });
      child.on("error", (e: NodeJS.ErrnoException) => finish(() => reject(this.#spawnError(e))));
      child.on("close", (code, signal) => finish(() => resolve({ stdout: Buffer.concat(out).toString("utf8"), stderr: err, exit: code ?? signal ?? "unknown" })));
    });
    if (exit !== 0) {
      const tail = stderrTail(stderr);
      throw this.#fail(`exited with ${typeof exit === "number" ? `code ${exit}` : `signal ${exit}`}${tail ? `: ${tail}` : " and printed nothing on stderr"}`);
    }
    return this.#parse(stdout);
  }

  #spawnError(e: NodeJS.ErrnoException): PlatformError {
    const hint = this.#o.exec.installHint?.trim();
    const what = e.code === "ENOENT" ? "was not found (is it installed and on PATH?)" : `could not be started: ${e.message}`;
    return this.#fail(`${what}${hint ? `\n${hint}` : ""}`, false, e);
  }

  /** Checks the plugin's answer: same apiVersion, a token or a certificate with its key, a valid expiry. */
  #parse(stdout: string): Cached {
    let doc: unknown;
    try {
      doc = JSON.parse(stdout);
    } catch (err) {
      throw this.#fail(`printed no ExecCredential: standard output is not JSON (${(err as Error).message})`);
    }
    const obj = (typeof doc === "object" && doc !== null ? doc : {}) as Record<string, unknown>;
    const bad = (what: string) => this.#fail(`printed an invalid ExecCredential: ${what}`);
    if (obj.kind !== "ExecCredential") throw bad(`kind is ${JSON.stringify(obj.kind)}, expected "ExecCredential"`);
    if (obj.apiVersion !== this.#o.exec.apiVersion) {
      throw bad(`apiVersion ${JSON.stringify(obj.apiVersion)} does not match the configured ${JSON.stringify(this.#o.exec.apiVersion)}`);
    }
    const status = obj.status;
    if (typeof status !== "object" || status === null) throw bad("status is missing");
    const s = status as Record<string, unknown>;
    const text = (key: string) => (typeof s[key] === "string" && s[key] !== "" ? (s[key] as string) : undefined);
    const token = text("token");
    const cert = text("clientCertificateData");
    const key = text("clientKeyData");
    if (!token && !cert && !key) throw bad("status holds neither token nor clientCertificateData with clientKeyData");
    if ((cert === undefined) !== (key === undefined)) throw bad("status.clientCertificateData and status.clientKeyData must be given together");
    if (cert && key) {
      try {
        checkClientPair(cert, key, "status.clientCertificateData", "status.clientKeyData");
      } catch (err) {
        throw bad(isPlatformError(err) ? err.message : String(err));
      }
    }
    let expiresAt: number | undefined;
    if (s.expirationTimestamp !== undefined && s.expirationTimestamp !== null) {
      const ts = s.expirationTimestamp;
      expiresAt = typeof ts === "string" && RFC3339.test(ts) ? Date.parse(ts) : NaN;
      if (!Number.isFinite(expiresAt)) throw bad(`status.expirationTimestamp ${JSON.stringify(ts)} is not an RFC 3339 time`);
    }
    const material: AuthMaterial = { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(cert && key ? { cert, key } : {}) };
    return { material, ...(expiresAt !== undefined ? { expiresAt } : {}) };
  }
}

/** The last lines of stderr (about 2 KiB), starting at a line boundary when earlier text was dropped. */
function stderrTail(kept: string): string {
  if (kept.length <= STDERR_TAIL) return kept.trim();
  const text = kept.slice(kept.indexOf("\n") + 1);
  return `…\n${text.trim()}`;
}
