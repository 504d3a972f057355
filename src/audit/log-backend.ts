// The audit log backend: one JSON Event per line, written synchronously (blocking mode), rotated by size, age and count.
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { PlatformError } from "../errors.js";

/** How a sink counts events it lost after `write` returned (a full buffer, a batch never delivered): `plugin` is the metric's label. */
export type AuditErrorReporter = (plugin: string, events: number, err: unknown) => void;

/**
 * Where events go, as JSON lines (one Event a line, each ending in "\n"). `write` throws (or rejects) when they
 * could not be stored; what that does to the request is the sink's `failsRequest`.
 */
export interface AuditSink {
  write(lines: string): void | Promise<void>;
  close(): void | Promise<void>;
  /** The `plugin` label of `apiserver_audit_error_total` for a failed write (default `log`). */
  readonly plugin?: string;
  /**
   * Which failed writes fail the request: `always` (the default, the log file: a request is never answered without
   * its record), `RequestReceived` (upstream's blocking-strict: only before the request is carried out), `never`
   * (upstream's blocking: counted and logged).
   */
  readonly failsRequest?: "always" | "RequestReceived" | "never";
  /** Called once by the auditor with how to count events lost after `write` returned. */
  attach?(report: AuditErrorReporter): void;
}

export interface AuditLogOptions {
  /** A file path, or `-` for standard output. */
  readonly path: string;
  /** Days to keep rotated files (0: no age limit). */
  readonly maxAgeDays?: number;
  /** Rotated files to keep (0: all). */
  readonly maxBackups?: number;
  /** Megabytes before the file is rotated (0: upstream's default of 100). */
  readonly maxSizeMb?: number;
  /** Milliseconds since the epoch; backups are named and aged by it. */
  readonly now?: () => number;
}

const MB = 1024 * 1024;
const DEFAULT_MAX_SIZE_MB = 100;
const DAY_MS = 24 * 3600 * 1000;

/** The backup name upstream's rotation (lumberjack) uses: `audit-2026-11-25T15-36-32.123.log`, in UTC. */
export function backupName(path: string, ms: number): string {
  const ext = extname(path);
  const stamp = new Date(ms).toISOString().replace("Z", "").replace(/:/g, "-");
  return join(dirname(path), `${basename(path, ext)}-${stamp}${ext}`);
}

const BACKUP_STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}$/;

/**
 * Writes each batch with one synchronous write: the event is on its way to the disk before the request goes on, and a
 * failure reaches the request (500) instead of being dropped. Rotation renames the file and opens a new one (0600).
 */
export class AuditLogFile implements AuditSink {
  readonly #o: Required<Omit<AuditLogOptions, "path">> & { path: string };
  #fd: number;
  #size = 0;

  constructor(options: AuditLogOptions) {
    this.#o = { maxAgeDays: 0, maxBackups: 0, maxSizeMb: 0, now: Date.now, ...options };
    for (const key of ["maxAgeDays", "maxBackups", "maxSizeMb"] as const) {
      const v = this.#o[key];
      if (!Number.isSafeInteger(v) || v < 0) throw new PlatformError("INVALID_OPTION", `expected \`${key}\` to be a whole number ≥ 0, got ${JSON.stringify(v)}`);
    }
    this.#fd = this.#open();
  }

  get #stdout(): boolean {
    return this.#o.path === "-";
  }

  #open(): number {
    if (this.#stdout) return 1;
    try {
      mkdirSync(dirname(this.#o.path), { recursive: true, mode: 0o700 });
      const fd = openSync(this.#o.path, "a", 0o600);
      this.#size = fstatSync(fd).size;
      return fd;
    } catch (err) {
      throw new PlatformError("IO_ERROR", `cannot open the audit log ${this.#o.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
    }
  }

  write(text: string): void {
    if (text.length === 0) return;
    const length = Buffer.byteLength(text);
    const max = (this.#o.maxSizeMb || DEFAULT_MAX_SIZE_MB) * MB;
    if (!this.#stdout && this.#size > 0 && this.#size + length > max) this.#rotate();
    try {
      // A string is written without a Buffer copy; a short write (rare: a full disk, a pipe) goes on with the rest.
      const done = writeSync(this.#fd, text);
      if (done < length) {
        const bytes = Buffer.from(text);
        for (let off = done; off < length; ) off += writeSync(this.#fd, bytes, off);
      }
    } catch (err) {
      throw new PlatformError("IO_ERROR", `cannot write the audit log ${this.#o.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
    }
    this.#size += length;
  }

  #rotate(): void {
    const now = this.#o.now();
    try {
      closeSync(this.#fd);
      renameSync(this.#o.path, backupName(this.#o.path, now));
    } finally {
      this.#fd = this.#open();
    }
    this.#prune(now);
  }

  /** Removes backups past maxBackups (oldest first) or older than maxAgeDays. */
  #prune(now: number): void {
    const ext = extname(this.#o.path);
    const prefix = `${basename(this.#o.path, ext)}-`;
    const dir = dirname(this.#o.path);
    const backups = readdirSync(dir)
      .filter((f) => f.startsWith(prefix) && f.endsWith(ext) && BACKUP_STAMP.test(f.slice(prefix.length, f.length - ext.length)))
      .sort()
      .reverse();
    backups.forEach((f, i) => {
      // Aged by the time in the name (the rotation's), as lumberjack does, not by the file's mtime.
      const stamp = f.slice(prefix.length, f.length - ext.length).replace(/T(\d{2})-(\d{2})-(\d{2})/, "T$1:$2:$3");
      const tooMany = this.#o.maxBackups > 0 && i >= this.#o.maxBackups;
      const tooOld = this.#o.maxAgeDays > 0 && Date.parse(`${stamp}Z`) < now - this.#o.maxAgeDays * DAY_MS;
      if (tooMany || tooOld) unlinkSync(join(dir, f));
    });
  }

  close(): void {
    if (!this.#stdout) closeSync(this.#fd);
  }
}
