// The free disk space `platform-ca storage defrag` needs, checked before it starts: SQLite's VACUUM copies the store's
// pages in use to a temporary database (on disk past what its page cache holds), then writes them back through the
// write-ahead log beside the store.
import { accessSync, constants, statSync, statfsSync } from "node:fs";

/** A directory and the file system it is on: the bytes an unprivileged process may still write there. */
export interface Volume {
  readonly dir: string;
  readonly free: number;
  readonly device: number;
}

export function volume(dir: string): Volume {
  const fs = statfsSync(dir);
  return { dir, free: fs.bavail * fs.bsize, device: statSync(dir).dev };
}

/**
 * Where SQLite's unix VFS puts a temporary file (os_unix.c): the first of $SQLITE_TMPDIR, $TMPDIR, /var/tmp, /usr/tmp
 * and /tmp that is a directory this process may write and search, else the working directory.
 */
export function sqliteTempDir(env: NodeJS.ProcessEnv = process.env): string {
  for (const dir of [env.SQLITE_TMPDIR, env.TMPDIR, "/var/tmp", "/usr/tmp", "/tmp"]) {
    if (dir && isWritableDir(dir)) return dir;
  }
  return ".";
}

function isWritableDir(dir: string): boolean {
  try {
    if (!statSync(dir).isDirectory()) return false;
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a defragment needing `need` (SqliteStorage.defragmentSpace) would not fit, or undefined: the log on the store's
 * file system, the temporary copy on the temporary directory's; one file system holding both needs their sum.
 */
export function spaceShortfall(need: { readonly log: number; readonly temporary: number }, store: Volume, temp: Volume): string | undefined {
  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
  const advice = "free some space, or point SQLITE_TMPDIR at a directory with room for the copy";
  if (store.device === temp.device) {
    if (store.free >= need.log + need.temporary) return undefined;
    const copy = need.temporary > 0 ? ` and SQLite's temporary copy in ${temp.dir}` : "";
    return `not enough free disk space to defragment: it needs about ${mib(need.log + need.temporary)} on the file system of ${store.dir} (the rebuilt database's log beside the store${copy}), ${mib(store.free)} free; ${advice}`;
  }
  const short = [
    ...(store.free < need.log ? [`${mib(need.log)} for the rebuilt database's log in ${store.dir} (${mib(store.free)} free)`] : []),
    ...(temp.free < need.temporary ? [`${mib(need.temporary)} for SQLite's temporary copy in ${temp.dir} (${mib(temp.free)} free)`] : []),
  ];
  return short.length === 0 ? undefined : `not enough free disk space to defragment: it needs about ${short.join(" and ")}; ${advice}`;
}
