// A configuration file followed for changes (authentication, authorization, encryption): each new content handed over
// once, one check at a time, and a file that cannot be read or is refused reported once until it changes.
import { createHash } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { silentLogger, type Logger } from "../logger.js";
import { systemClock, type CancelTimer, type Clock } from "../time/clock.js";

/** The digest a file's content is compared by (also what a loaded configuration records of its text). */
export const contentDigest = (text: string): string => createHash("sha256").update(text).digest("hex");

/** Why a check did not use the file: it could not be read (`code` from the file system), or its content was refused. */
export interface FileRefusal {
  readonly reason: string;
  readonly unreadable: boolean;
  readonly code?: string;
}

export interface WatchedFileOptions {
  readonly path: string;
  /** The digest of the content already in use, so the first check does not hand it over again. */
  readonly initialDigest: string;
  /** The periodic check, beside the folder watch (on the one clock). */
  readonly pollMs: number;
  /** Also watch the file's folder, so an edit is seen at once (default true; the poll covers file systems without). */
  readonly watchFolder?: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Uses a new content; throws to refuse it (the running configuration stays). */
  apply(text: string): Promise<void> | void;
  /** Said once per distinct refusal: the same missing file or bad content seen again is not said again. */
  refused(r: FileRefusal): void;
}

export interface WatchedFile {
  /** Reads the file now; resolves to whether a new content was applied. */
  check(): Promise<boolean>;
  stop(): void;
}

export function watchConfigFile(o: WatchedFileOptions): WatchedFile {
  const clock = o.clock ?? systemClock;
  /** The content in use: the file coming back with it after a failed read is not a change. */
  let applied = o.initialDigest;
  /** The last content seen, applied or refused, or `\0<code>` for the last read failure: each said once. */
  let seen = applied;
  let queue: Promise<boolean> = Promise.resolve(false);
  let stopped = false;
  let timer: CancelTimer | undefined;
  let watcher: FSWatcher | undefined;

  const once = async (): Promise<boolean> => {
    if (stopped) return false;
    let text: string;
    try {
      text = await readFile(o.path, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const key = `\0${code ?? (err as Error).message}`;
      if (key === seen) return false;
      seen = key;
      o.refused({ reason: `cannot read it: ${code ?? String(err)}`, unreadable: true, ...(code !== undefined && { code }) });
      return false;
    }
    const digest = contentDigest(text);
    if (digest === seen) return false;
    // Recorded before applying: a bad content is refused once, not at every check until it changes.
    seen = digest;
    if (digest === applied) return false;
    try {
      await o.apply(text);
      applied = digest;
      return true;
    } catch (err) {
      o.refused({ reason: (err as Error).message, unreadable: false });
      return false;
    }
  };
  // One check at a time: a burst of change events must not build several configurations at once.
  const check = (): Promise<boolean> => (queue = queue.then(once, once));
  const schedule = (): void => {
    if (!stopped) timer = clock.setTimer(o.pollMs, () => void check().finally(schedule));
  };
  schedule();
  if (o.watchFolder !== false) {
    try {
      // The folder, not the file: an editor's or a ConfigMap's rename replaces the inode a file watch would follow.
      watcher = watch(dirname(o.path), (_event, name) => {
        if (name === null || name === basename(o.path) || name.startsWith("..")) void check();
      });
      watcher.unref();
    } catch (err) {
      (o.logger ?? silentLogger()).debug({ err: (err as Error).message, file: o.path }, "cannot watch the configuration file's folder; checking it periodically");
    }
  }
  return {
    check,
    stop() {
      stopped = true;
      timer?.();
      watcher?.close();
    },
  };
}
