// Reads the output of `strace -f -y -o FILE` into system calls, and what it shows of a store's durability promise.
// Under -f a call that another thread interrupts is printed in two lines, `PID name(args <unfinished ...>` and later
// `PID <... name resumed>rest) = result`; they are joined here into one call, so none is lost or misplaced.

/** One system call; `start` and `end` are the indexes of the lines where it entered and returned. */
export interface Syscall {
  readonly pid: number;
  readonly name: string;
  /** As printed: those of the first line followed by any printed on return (with -y, `5</path>` for a descriptor). */
  args: string;
  /** As printed (`0`, `-1 EIO (Input/output error)`, `?`); undefined when the trace ends before the call returned. */
  result: string | undefined;
  readonly start: number;
  /** `start` when the call was printed in one line; Infinity when it never returned. */
  end: number;
}

const LINE = /^(\d+) +(.*)$/;
const WHOLE = /^(\w+)\((.*)\) += (.*)$/;
const UNFINISHED = /^(\w+)\((.*) <unfinished \.\.\.>$/;
const RESUMED = /^<\.\.\. (\w+) resumed>(.*)\) += (.*)$/;
/** Signals (`--- SIGCHLD ... ---`) and exits (`+++ exited with 0 +++`) are not calls. */
const NOT_A_CALL = /^(---|\+\+\+) /;

/** The calls in the order they entered the kernel. A line of another form throws, so no call goes unseen. */
export function parseStrace(text: string): Syscall[] {
  const calls: Syscall[] = [];
  const unfinished = new Map<number, Syscall>();
  text.split("\n").forEach((line, index) => {
    if (line === "") return;
    const [, pidText, rest = ""] = LINE.exec(line) ?? fail(line, "no pid (strace -f -o prints one on every line)");
    const pid = Number(pidText);
    let m: RegExpExecArray | null;
    if ((m = RESUMED.exec(rest))) {
      const call = unfinished.get(pid);
      if (call === undefined || call.name !== m[1]) fail(line, `resumes a call that pid ${pid} did not leave unfinished`);
      call.args += m[2];
      [call.result, call.end] = [m[3], index];
      unfinished.delete(pid);
    } else if ((m = UNFINISHED.exec(rest))) {
      if (unfinished.has(pid)) fail(line, `pid ${pid} already has an unfinished call`);
      const call: Syscall = { pid, name: m[1]!, args: m[2]!, result: undefined, start: index, end: Infinity };
      unfinished.set(pid, call);
      calls.push(call);
    } else if ((m = WHOLE.exec(rest))) {
      calls.push({ pid, name: m[1]!, args: m[2]!, result: m[3], start: index, end: index });
    } else if (!NOT_A_CALL.test(rest)) {
      fail(line, "not a call, signal or exit");
    }
  });
  return calls;
}

function fail(line: string, why: string): never {
  throw new Error(`strace line ${JSON.stringify(line)}: ${why}`);
}

/** What the trace shows when the writer printed an acknowledgement. */
export interface Ack {
  /** The write-ahead log had writes that no completed flush covers. */
  dirty: boolean;
  /** A flush that completed since the previous acknowledgement covered new log writes (a new commit). */
  fresh: boolean;
  /** The database file had writes that no completed flush covers: a checkpoint's copy of the log must be on disk first. */
  dbDirty: boolean;
  walWrites: number;
  dbWrites: number;
  /** Writes to the database file so far that entered while the log had writes no completed flush covered. */
  dbWritesOverDirtyLog: number;
  /** Writes to the log so far that entered while the database file had writes no completed flush covered. */
  walWritesOverDirtyDb: number;
}

/**
 * Follows the writes and flushes (fsync, fdatasync) of the database file `db` and of its log, by the paths -y shows
 * (any descriptor counts: SQLite writes the log through its own, the storage flushes it through another), and
 * describes each acknowledgement, a line `/crash/…` the writer prints on stdout.
 *
 * strace prints a call's entry before the kernel runs it and its return after, so the order of lines is safe to judge
 * by: a flush covers a write that returned before the flush entered, and counts once it returned; an acknowledgement
 * counts from its entry. A write that entered while a flush was running is not covered by it.
 */
export function acksOf(calls: readonly Syscall[], db: string): Ack[] {
  const log = new Unflushed();
  const file = new Unflushed();
  let [fresh, walWrites, dbWrites, dbWritesOverDirtyLog, walWritesOverDirtyDb] = [false, 0, 0, 0, 0];
  const acks: Ack[] = [];
  // A call printed in one line enters and returns at the same index: its entry goes first.
  const events = calls.flatMap((call) => [{ at: call.start, entry: true, call }, { at: call.end, entry: false, call }]);
  events.sort((a, b) => a.at - b.at || Number(b.entry) - Number(a.entry));
  for (const { entry, call } of events) {
    const path = /^\d+<([^>]*)>/.exec(call.args)?.[1];
    const write = call.name === "pwrite64" || call.name === "write";
    const flush = (call.name === "fsync" || call.name === "fdatasync") && call.result === "0";
    if (entry && write && path === `${db}-wal`) {
      if (file.dirty) walWritesOverDirtyDb++;
      log.wrote(call);
      walWrites++;
    } else if (entry && write && path === db) {
      if (log.dirty) dbWritesOverDirtyLog++;
      file.wrote(call);
      dbWrites++;
    } else if (!entry && flush && path === `${db}-wal`) fresh = log.flushed(call) || fresh;
    else if (!entry && flush && path === db) file.flushed(call);
    else if (entry && call.name === "write" && /^1(<[^>]*>)?, "\/crash\//.test(call.args)) {
      acks.push({ dirty: log.dirty, fresh, dbDirty: file.dirty, walWrites, dbWrites, dbWritesOverDirtyLog, walWritesOverDirtyDb });
      fresh = false;
    }
  }
  return acks;
}

/** The writes to one file that no completed flush covers yet, each by the line where it returned. */
class Unflushed {
  #ends: number[] = [];

  get dirty(): boolean {
    return this.#ends.length > 0;
  }

  wrote(call: Syscall): void {
    this.#ends.push(call.end);
  }

  /** Drops the writes the flush covers; returns whether there were any. */
  flushed(call: Syscall): boolean {
    const before = this.#ends.length;
    this.#ends = this.#ends.filter((end) => end > call.start);
    return this.#ends.length < before;
  }
}
