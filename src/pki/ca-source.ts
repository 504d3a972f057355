// Hot reload of a CA certificate/key file pair: cheap change checks, and the last good pair kept when files break.
import { statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { invalidOption, PlatformError, toPlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { caFromPem } from "./ca.js";
import { isPkcs11Uri, maskPin } from "./pkcs11-uri.js";
import { isWrappedKey, unwrapKeyText } from "./wrapped-key.js";
import type { CaKeyPair } from "./types.js";

export interface FileFacts {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs?: number;
}

/** The file-system calls CaSource makes; tests pass in-memory versions. */
export interface CaSourceFs {
  stat(path: string): Promise<FileFacts>;
  readFile(path: string): Promise<Uint8Array>;
}

export interface CaSourceOptions {
  readonly certFile: string;
  /** The key file, or an RFC 7512 `pkcs11:` URI naming the key in a token (then only the certificate file is watched). */
  readonly keyFile: string;
  /** Accept intermediates after the CA certificate in the certificate file. */
  readonly intermediates?: boolean;
  readonly clock?: () => Date;
  readonly logger?: Logger;
  readonly fs?: CaSourceFs;
  /** Poll period of start(); 0 (the default) means refresh() is only called by the user, e.g. before each signature. */
  readonly pollIntervalMs?: number;
  /** Runs `tick` every `ms`; returns a cancel function. Defaults to an unref'd setInterval. */
  readonly schedule?: (tick: () => void, ms: number) => () => void;
  /** Called once per distinct failure (broken or unreadable files); the previous pair stays in use. */
  readonly onError?: (error: PlatformError) => void;
  /** Called after a new pair was loaded. */
  readonly onChange?: (ca: CaKeyPair, generation: number) => void;
}

/** A CA that signed before the files changed. */
export interface CaHistoryEntry {
  readonly ca: CaKeyPair;
  readonly generation: number;
  /** When the files stopped naming this CA. */
  readonly retiredAt: Date;
  /** Latest NotAfter of a certificate it issued (recordIssued); its trust anchor is needed until then. */
  readonly lastIssuedNotAfter?: Date;
}

interface Loaded {
  readonly ca: CaKeyPair;
  readonly generation: number;
  readonly cert: Uint8Array;
  readonly key: Uint8Array;
  lastIssuedNotAfter?: Date;
}

const HISTORY_LIMIT = 16;

const defaultFs: CaSourceFs = {
  // refresh() runs before every signature: a local stat answered synchronously costs microseconds, where the
  // promise API's thread-pool round trip was ~6% of the controller's CPU in a burst (docs/benchmarks.md).
  stat: async (path) => statSync(path),
  readFile: (path) => readFile(path),
};

function defaultSchedule(tick: () => void, ms: number): () => void {
  const handle = setInterval(tick, ms);
  handle.unref();
  return () => clearInterval(handle);
}

export class CaSource {
  private readonly options: CaSourceOptions;
  private readonly fs: CaSourceFs;
  private readonly clock: () => Date;
  private readonly logger: Logger;
  private loaded: Loaded | undefined;
  private retired: (Loaded & { retiredAt: Date })[] = [];
  private seen = "";
  private inFlight: Promise<boolean> | undefined;
  private cancelPoll: (() => void) | undefined;
  private lastGeneration = 0;
  /** Set by load(): its caller stops with the failure, so it is not logged as well. */
  private quiet = false;
  /** The failure of the last refresh that could not load the files; undefined after a good load. */
  lastError: PlatformError | undefined;

  constructor(options: CaSourceOptions) {
    for (const name of ["certFile", "keyFile"] as const) {
      if (typeof options[name] !== "string" || options[name].length === 0) throw invalidOption(name, "to be a file path", options[name]);
    }
    const poll = options.pollIntervalMs ?? 0;
    if (!Number.isSafeInteger(poll) || poll < 0) throw invalidOption("pollIntervalMs", "to be an integer ≥ 0", poll);
    this.options = options;
    this.fs = options.fs ?? defaultFs;
    this.clock = options.clock ?? (() => new Date());
    this.logger = options.logger ?? silentLogger();
  }

  /** Counts loads of a new pair: 0 before the first one. */
  get generation(): number {
    return this.loaded?.generation ?? 0;
  }

  /** The pair in use; throws CA_INVALID (retryable) when none could be loaded yet. */
  current(): CaKeyPair {
    if (this.loaded) return this.loaded.ca;
    const reason = this.lastError ? `: ${this.lastError.message}` : "; call refresh() first";
    throw new PlatformError("CA_INVALID", `no CA loaded from ${this.options.certFile} and ${maskPin(this.options.keyFile)}${reason}`, {
      ...(this.lastError && { cause: this.lastError }),
    });
  }

  /**
   * Re-reads the files when their stat facts changed and re-parses only when their bytes changed. Resolves true
   * when a new pair is in use. Never rejects for broken files: those are reported through lastError/onError.
   */
  refresh(): Promise<boolean> {
    this.inFlight ??= this.check().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** The first load, for a caller that cannot start without the CA: throws the failure instead of logging it. */
  async load(): Promise<void> {
    this.quiet = true;
    try {
      await this.refresh();
    } finally {
      this.quiet = false;
    }
    if (this.lastError) throw this.lastError;
  }

  private async check(): Promise<boolean> {
    const { certFile, keyFile } = this.options;
    const inToken = isPkcs11Uri(keyFile);
    let stamp: string;
    let cert: Uint8Array;
    let key: Uint8Array;
    try {
      const [c, k] = await Promise.all([this.fs.stat(certFile), inToken ? undefined : this.fs.stat(keyFile)]);
      stamp = `${facts(c)}|${k ? facts(k) : keyFile}`;
      if (stamp === this.seen) return false;
      [cert, key] = await Promise.all([this.fs.readFile(certFile), inToken ? Buffer.from(keyFile) : this.fs.readFile(keyFile)]);
    } catch (err) {
      const error = new PlatformError("CA_INVALID", `cannot read CA files ${certFile}, ${maskPin(keyFile)}: ${(err as Error).message}`, { cause: err });
      return this.fail(error, `unreadable|${error.message}`);
    }
    if (this.loaded && sameBytes(cert, this.loaded.cert) && sameBytes(key, this.loaded.key)) {
      // Touched but unchanged, or back to the pair in use after a broken state.
      this.seen = stamp;
      this.lastError = undefined;
      return false;
    }
    let ca: CaKeyPair;
    const wrapped = !inToken && isWrappedKey(key);
    try {
      const options = { intermediates: this.options.intermediates === true, certName: certFile, keyName: maskPin(keyFile) };
      // A token key is opened only here, when the certificate changed: pkcs11js is loaded on first use.
      ca = inToken
        ? await (await import("./pkcs11-ca.js")).loadTokenCa(text(cert), keyFile, options)
        : caFromPem(text(cert), wrapped ? await unwrapKeyText(text(key), keyFile) : text(key), options);
    } catch (err) {
      const error = toPlatformError(err, "CA_INVALID");
      // A token may come back (inserted, unlocked), and so may the KMS of a wrapped key, with the files unchanged:
      // remember the failure, not the files, so the next refresh tries again; the same failure is still reported once.
      return this.fail(error, inToken || wrapped ? `${stamp}|${error.message}` : stamp);
    }
    this.seen = stamp;
    this.install(ca, cert, key);
    return true;
  }

  private fail(error: PlatformError, stamp: string): false {
    if (stamp === this.seen) return false;
    this.seen = stamp;
    this.lastError = error;
    if (!this.quiet) this.logger.warn(
      { code: error.code, generation: this.generation, certFile: this.options.certFile, keyFile: maskPin(this.options.keyFile) },
      `CA files not usable, ${this.loaded ? "keeping the previous CA" : "no CA loaded"}: ${error.message}`,
    );
    this.options.onError?.(error);
    return false;
  }

  private install(ca: CaKeyPair, cert: Uint8Array, key: Uint8Array): void {
    const now = this.clock();
    const previous = this.loaded;
    // Rolling back to an earlier CA keeps what is known about the certificates it issued.
    const back = this.retired.findIndex((r) => sameBytes(r.ca.certDer, ca.certDer));
    const restored = back >= 0 ? this.retired.splice(back, 1)[0] : undefined;
    const stillNeeded = this.retired.filter((r) => (r.lastIssuedNotAfter?.getTime() ?? -Infinity) > now.getTime());
    this.retired = [...(previous ? [{ ...previous, retiredAt: now }] : []), ...stillNeeded].slice(0, HISTORY_LIMIT);
    this.lastGeneration += 1;
    this.loaded = {
      ca,
      cert,
      key,
      generation: this.lastGeneration,
      ...(restored?.lastIssuedNotAfter && { lastIssuedNotAfter: restored.lastIssuedNotAfter }),
    };
    this.lastError = undefined;
    this.logger.info({ generation: this.lastGeneration, notAfter: ca.notAfter.toISOString() }, "CA loaded");
    this.options.onChange?.(ca, this.lastGeneration);
  }

  /** Notes that `ca` issued a certificate valid until `notAfter` (call it after each issuance). */
  recordIssued(ca: CaKeyPair, notAfter: Date): void {
    const entry = this.loaded?.ca === ca ? this.loaded : this.retired.find((r) => r.ca === ca);
    if (entry && (entry.lastIssuedNotAfter === undefined || entry.lastIssuedNotAfter < notAfter)) entry.lastIssuedNotAfter = notAfter;
  }

  /**
   * Previous CAs, newest first. A CA is dropped once its last issued certificate has expired (checked at each
   * change); one that never issued is dropped at the next change.
   */
  history(): readonly CaHistoryEntry[] {
    return this.retired.map((r) => ({
      ca: r.ca,
      generation: r.generation,
      retiredAt: r.retiredAt,
      ...(r.lastIssuedNotAfter && { lastIssuedNotAfter: r.lastIssuedNotAfter }),
    }));
  }

  /** PEM certificates to publish at `now`: the current CA, then earlier CAs whose certificates are still valid. */
  trustAnchors(now: Date = this.clock()): string[] {
    const old = this.retired.filter((r) => (r.lastIssuedNotAfter?.getTime() ?? -Infinity) > now.getTime());
    return [...(this.loaded ? [this.loaded.ca.certPem] : []), ...old.map((r) => r.ca.certPem)];
  }

  /** Loads the files once, then polls them when pollIntervalMs > 0, until stop() or the signal aborts. */
  async start(signal?: AbortSignal): Promise<void> {
    this.stop();
    await this.refresh();
    const every = this.options.pollIntervalMs ?? 0;
    if (every === 0 || signal?.aborted) return;
    this.cancelPoll = (this.options.schedule ?? defaultSchedule)(() => void this.refresh(), every);
    signal?.addEventListener("abort", () => this.stop(), { once: true });
  }

  stop(): void {
    this.cancelPoll?.();
    this.cancelPoll = undefined;
  }
}

function facts(f: FileFacts): string {
  return `${f.ino}:${f.size}:${f.mtimeMs}:${f.ctimeMs ?? ""}`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}
