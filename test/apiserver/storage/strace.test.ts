// The strace reader of the durability tests, on hand-made traces: calls split by other threads are joined, and an
// acknowledgement counts as flushed only after a flush that entered once the log writes had returned, and returned 0.
import { describe, expect, it } from "vitest";
import { acksOf, parseStrace } from "./strace.js";

const db = "/d/store.db";
const wal = `7<${db}-wal>`;
const trace = (...lines: string[]) => parseStrace(lines.join("\n") + "\n");
const ack = (pid: number, n: number) => `${pid}  write(1<pipe:[9]>, "/crash/t/00000${n} ${n + 2}\\n", 20) = 20`;
const commit = (pid: number) => `${pid}  pwrite64(${wal}, "\\0\\0"..., 4120, 32) = 4120`;

describe("parseStrace", () => {
  it("joins a call another thread interrupted, keyed by pid, with its arguments and its result", () => {
    const calls = trace(
      `10  fdatasync(${wal} <unfinished ...>`,
      `11  pwrite64(${wal}, "\\0"..., 4120, 0 <unfinished ...>`,
      `12  --- SIGCHLD {si_signo=SIGCHLD} ---`,
      `11  <... pwrite64 resumed>)           = 4120`,
      `10  <... fdatasync resumed>)          = -1 EIO (Input/output error)`,
      `11  fsync(3</d>)                   = 0`,
      `12  +++ exited with 0 +++`,
    );
    expect(calls).toEqual([
      { pid: 10, name: "fdatasync", args: wal, result: "-1 EIO (Input/output error)", start: 0, end: 4 },
      { pid: 11, name: "pwrite64", args: `${wal}, "\\0"..., 4120, 0`, result: "4120", start: 1, end: 3 },
      { pid: 11, name: "fsync", args: "3</d>", result: "0", start: 5, end: 5 },
    ]);
  });

  it("keeps a call the trace ends in as unreturned, and refuses lines it cannot place", () => {
    expect(trace(`10  fdatasync(${wal} <unfinished ...>`)).toMatchObject([{ result: undefined, end: Infinity }]);
    expect(() => trace(`10  <... fdatasync resumed>) = 0`)).toThrow(/did not leave unfinished/);
    expect(() => trace(`10  fsync(${wal} <unfinished ...>`, `10  <... fdatasync resumed>) = 0`)).toThrow(/did not leave/);
    expect(() => trace(`fsync(${wal}) = 0`)).toThrow(/no pid/);
  });
});

describe("acksOf", () => {
  it("counts a flush split by the acknowledging thread once it returned, before the acknowledgement", () => {
    const acks = acksOf(trace(commit(1), `2  fdatasync(${wal} <unfinished ...>`, `1  write(5<anon_inode:[eventfd]>, "\\1", 8) = 8`, `2  <... fdatasync resumed>) = 0`, ack(1, 0)), db);
    expect(acks).toEqual([{ dirty: false, fresh: true, dbDirty: false, walWrites: 1, dbWrites: 0, dbWritesOverDirtyLog: 0, walWritesOverDirtyDb: 0 }]);
  });

  it("finds an acknowledgement written while the flush still runs, or after it failed", () => {
    const ackStart = ack(1, 0).replace(") = 20", " <unfinished ...>");
    const early = acksOf(trace(commit(1), `2  fdatasync(${wal} <unfinished ...>`, ackStart, `2  <... fdatasync resumed>) = 0`, `1  <... write resumed>) = 20`), db);
    expect(early).toMatchObject([{ dirty: true, fresh: false }]);
    const failed = acksOf(trace(commit(1), `2  fdatasync(${wal}) = -1 EIO (Input/output error)`, ack(1, 0)), db);
    expect(failed).toMatchObject([{ dirty: true, fresh: false }]);
  });

  it("leaves a log write that entered during a flush for the next flush", () => {
    const calls = trace(
      commit(1),
      `2  fdatasync(${wal} <unfinished ...>`,
      `1  pwrite64(${wal}, "\\0"..., 4120, 4152) = 4120`,
      `2  <... fdatasync resumed>) = 0`,
      ack(1, 0),
      `3  fdatasync(${wal}) = 0`,
      ack(1, 1),
      ack(1, 2),
    );
    expect(acksOf(calls, db)).toMatchObject([{ dirty: true, fresh: true }, { dirty: false, fresh: true }, { dirty: false, fresh: false }]);
  });

  it("follows the checkpoint's copy into the database file until its fsync, whatever the descriptor", () => {
    const copy = `1  pwrite64(9<${db}>, "\\r\\0"..., 4096, 8192) = 4096`;
    const acks = acksOf(trace(copy, ack(1, 0), `1  fsync(12<${db}>) = 0`, ack(1, 1)), db);
    expect(acks).toMatchObject([{ dbDirty: true, dbWrites: 1 }, { dbDirty: false, dbWrites: 1 }]);
  });

  it("counts a checkpoint's copy made over unflushed log writes, and log writes made over an unflushed copy", () => {
    const copy = `1  pwrite64(9<${db}>, "\\r\\0"..., 4096, 8192) = 4096`;
    const restart = `1  pwrite64(${wal}, "\\0\\0"..., 32, 0) = 32`;
    const early = acksOf(trace(commit(1), copy, `2  fdatasync(${wal}) = 0`, `2  fdatasync(9<${db}>) = 0`, restart, ack(1, 0)), db);
    expect(early).toMatchObject([{ dbWritesOverDirtyLog: 1, walWritesOverDirtyDb: 0 }]);
    const late = acksOf(trace(commit(1), `2  fdatasync(${wal}) = 0`, copy, restart, `2  fdatasync(9<${db}>) = 0`, ack(1, 0)), db);
    expect(late).toMatchObject([{ dbWritesOverDirtyLog: 0, walWritesOverDirtyDb: 1 }]);
    const ordered = acksOf(trace(commit(1), `2  fdatasync(${wal}) = 0`, copy, `2  fdatasync(9<${db}>) = 0`, restart, ack(1, 0)), db);
    expect(ordered).toMatchObject([{ dbWritesOverDirtyLog: 0, walWritesOverDirtyDb: 0, dbDirty: false, dirty: true }]);
  });
});
