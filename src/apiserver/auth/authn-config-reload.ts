// The --authentication-config file, reloaded on change: a good new file replaces the authenticators, a bad one is logged and ignored.
import { readFile } from "node:fs/promises";
import { parseAuthenticationConfig, type AnonymousConfig, type AuthenticationConfigOptions } from "../../config/authentication-config.js";
import { contentDigest, watchConfigFile, type FileRefusal, type WatchedFile } from "../../config/watched-file.js";
import { silentLogger, type Logger } from "../../logger.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { JwtAuthenticators, type JwtAuthenticatorsOptions } from "./authn-jwt.js";

/** What the file configures, as the authenticator chain reads it on each request. */
export interface ConfiguredAuthentication {
  readonly jwt: JwtAuthenticators;
  readonly anonymous?: AnonymousConfig;
}

export interface AuthenticationConfigFileOptions extends JwtAuthenticatorsOptions, AuthenticationConfigOptions {
  readonly path: string;
  /** How often the file is checked for a change (default 10 s). */
  readonly checkIntervalMs?: number;
  /** How long a reload waits for the new issuers' keys before switching anyway (default 10 s). */
  readonly switchWaitMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

export class AuthenticationConfigFile {
  readonly #o: AuthenticationConfigFileOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #current: ConfiguredAuthentication | undefined;
  #file: WatchedFile | undefined;
  #stopped = false;
  /** Reloads so far and the last refused file's reason, for tests and logs. */
  readonly stats = { reloads: 0, refused: 0, lastError: "" };

  constructor(options: AuthenticationConfigFileOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger();
  }

  get current(): ConfiguredAuthentication | undefined {
    return this.#current;
  }

  /** Loads the file (throws CONFIG_INVALID when it is bad: a server must not start with it), starts fetching keys and watching. */
  async start(): Promise<void> {
    const text = await readFile(this.#o.path, "utf8");
    this.#current = this.#build(text);
    void this.#current.jwt.start();
    this.#file = watchConfigFile({
      path: this.#o.path,
      initialDigest: contentDigest(text),
      pollMs: this.#o.checkIntervalMs ?? 10_000,
      clock: this.#clock,
      logger: this.#logger,
      apply: (next) => this.#swap(next),
      refused: (r) => this.#refuse(r),
    });
  }

  stop(): void {
    this.#stopped = true;
    this.#file?.stop();
    this.#current?.jwt.stop();
  }

  /** Issuers whose keys are not fetched yet, with why (the readiness check). */
  notReady(): { issuer: string; reason: string }[] {
    return this.#current?.jwt.notReady() ?? [];
  }

  /** Reloads when the file's content changed; a file that cannot be read or is invalid keeps the running configuration. */
  async check(): Promise<void> {
    await this.#file?.check();
  }

  #build(text: string): ConfiguredAuthentication {
    const loaded = parseAuthenticationConfig(text, this.#o.path, this.#o);
    for (const w of loaded.warnings) this.#logger.warn({ file: this.#o.path }, w);
    const jwt = new JwtAuthenticators(loaded, this.#o);
    return { jwt, ...(loaded.anonymous && { anonymous: loaded.anonymous }) };
  }

  async #swap(text: string): Promise<void> {
    const next = this.#build(text);
    // The new issuers get a moment to fetch their keys, so a reload does not answer 401s meanwhile.
    const started = next.jwt.start();
    await Promise.race([started, this.#clock.sleep(this.#o.switchWaitMs ?? 10_000)]);
    if (this.#stopped) return next.jwt.stop();
    const previous = this.#current;
    this.#current = next;
    previous?.jwt.stop();
    this.stats.reloads++;
    this.#logger.info({ file: this.#o.path, issuers: next.jwt.issuers }, "reloaded the authentication configuration");
  }

  #refuse({ reason }: FileRefusal): void {
    this.stats.refused++;
    this.stats.lastError = reason;
    this.#logger.error({ file: this.#o.path, reason }, "kept the running authentication configuration: the changed file is not valid");
  }
}
