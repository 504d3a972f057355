// The --authentication-config file, reloaded on change: a good new file replaces the authenticators, a bad one is logged and ignored.
import { createHash } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { parseAuthenticationConfig, type AnonymousConfig, type AuthenticationConfigOptions } from "../../config/authentication-config.js";
import { silentLogger, type Logger } from "../../logger.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
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

const digest = (text: string): string => createHash("sha256").update(text).digest("hex");

export class AuthenticationConfigFile {
  readonly #o: AuthenticationConfigFileOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #current: ConfiguredAuthentication | undefined;
  #digest = "";
  #timer: CancelTimer | undefined;
  #watcher: FSWatcher | undefined;
  #checking: Promise<void> = Promise.resolve();
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
    this.#digest = digest(text);
    void this.#current.jwt.start();
    this.#schedule();
    // A change is seen at once where the platform reports it (editors often replace the file: the folder is watched);
    // the periodic check covers file systems that do not.
    try {
      this.#watcher = watch(dirname(this.#o.path), (_event, name) => {
        if (name === null || name === basename(this.#o.path)) void this.check();
      });
      this.#watcher.unref();
    } catch (err) {
      this.#logger.debug({ err, file: this.#o.path }, "cannot watch the authentication configuration; checking it periodically");
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.();
    this.#watcher?.close();
    this.#current?.jwt.stop();
  }

  /** Issuers whose keys are not fetched yet, with why (the readiness check). */
  notReady(): { issuer: string; reason: string }[] {
    return this.#current?.jwt.notReady() ?? [];
  }

  #build(text: string): ConfiguredAuthentication {
    const loaded = parseAuthenticationConfig(text, this.#o.path, this.#o);
    for (const w of loaded.warnings) this.#logger.warn({ file: this.#o.path }, w);
    const jwt = new JwtAuthenticators(loaded, this.#o);
    return { jwt, ...(loaded.anonymous && { anonymous: loaded.anonymous }) };
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimer(this.#o.checkIntervalMs ?? 10_000, () => void this.check().finally(() => this.#schedule()));
  }

  /** Reloads when the file's content changed; a file that cannot be read or is invalid keeps the running configuration. */
  check(): Promise<void> {
    // One check at a time: a burst of change events must not build several configurations at once.
    this.#checking = this.#checking.then(() => this.#checkOnce());
    return this.#checking;
  }

  async #checkOnce(): Promise<void> {
    if (this.#stopped) return;
    let text: string;
    try {
      text = await readFile(this.#o.path, "utf8");
    } catch (err) {
      // Reported once, as bad content is: the folder watch and the periodic check both see the same missing file.
      const reason = `cannot read it: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
      if (this.#digest === reason) return;
      this.#digest = reason;
      return this.#refuse(reason);
    }
    const d = digest(text);
    if (d === this.#digest) return;
    let next: ConfiguredAuthentication;
    try {
      next = this.#build(text);
    } catch (err) {
      this.#digest = d; // the same bad content is reported once
      return this.#refuse((err as Error).message);
    }
    this.#digest = d;
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

  #refuse(reason: string): void {
    this.stats.refused++;
    this.stats.lastError = reason;
    this.#logger.error({ file: this.#o.path, reason }, "kept the running authentication configuration: the changed file is not valid");
  }
}
