import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuditLogFile, backupName } from "../../src/audit/log-backend.js";
import type { AuditEvent } from "../../src/audit/event.js";
import { isPlatformError } from "../../src/errors.js";
import { tempDir } from "../fixtures/temp-dir.js";

const T0 = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
const DAY = 24 * 3600 * 1000;

/** An event of about `bytes` bytes once written. */
function event(id: string, bytes = 200): AuditEvent {
  const stamp = "2030-01-02T03:04:05.678000Z";
  return { kind: "Event", apiVersion: "audit.platform.io/v1", level: "Metadata", auditID: id, stage: "ResponseComplete", requestURI: "/version", verb: "get", user: { username: "u" }, requestReceivedTimestamp: stamp, stageTimestamp: stamp, annotations: { pad: "x".repeat(bytes) } };
}

const lines = (...events: AuditEvent[]) => events.map((e) => `${JSON.stringify(e)}\n`).join("");

describe("AuditLogFile", () => {
  it("writes one JSON event a line, appending to an existing file, created 0600", () => {
    const path = join(tempDir(), "sub", "audit.log");
    const log = new AuditLogFile({ path });
    log.write(lines(event("a"), event("b")));
    log.close();
    const again = new AuditLogFile({ path });
    again.write(lines(event("c")));
    again.close();
    const written = readFileSync(path, "utf8").split("\n");
    expect(written.pop()).toBe("");
    expect(written.map((l) => JSON.parse(l).auditID)).toEqual(["a", "b", "c"]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("names backups as upstream's rotation does", () => {
    expect(backupName("/var/log/audit.log", T0)).toBe("/var/log/audit-2030-01-02T03-04-05.678.log");
    expect(backupName("/var/log/audit", T0)).toBe("/var/log/audit-2030-01-02T03-04-05.678");
  });

  it("rotates past maxsize, keeps maxbackup backups and removes those older than maxage", () => {
    const dir = tempDir();
    const path = join(dir, "audit.log");
    // A backup from long ago (by the time in its name) and a file that only looks alike.
    writeFileSync(backupName(path, T0 - 40 * DAY), "old\n");
    writeFileSync(join(dir, "audit-notes.log"), "keep\n");
    let now = T0;
    const log = new AuditLogFile({ path, maxSizeMb: 1, maxBackups: 2, maxAgeDays: 30, now: () => now });
    const big = 300 * 1024;
    for (let i = 0; i < 10; i++) {
      now += 1000;
      log.write(lines(event(`e${i}`, big)));
    }
    log.close();
    const files = readdirSync(dir).sort();
    // 10 × 300 KiB in 1 MiB files: three per file, so rotations at the 4th, 7th and 10th write; the two newest are kept.
    expect(files).toEqual(["audit-2030-01-02T03-04-15.678.log", "audit-2030-01-02T03-04-12.678.log", "audit-notes.log", "audit.log"].sort());
    expect(readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l).auditID)).toEqual(["e9"]);
    for (const f of files.filter((f) => f.startsWith("audit-2030"))) expect(statSync(join(dir, f)).size).toBeLessThanOrEqual(1024 * 1024);
  });

  it("fails loudly when the file cannot be written, and refuses bad settings", () => {
    const dir = tempDir();
    expect(() => new AuditLogFile({ path: dir })).toThrow(/cannot open the audit log .*: EISDIR/);
    try {
      new AuditLogFile({ path: join(dir, "a.log"), maxBackups: -1 });
      expect.unreachable();
    } catch (err) {
      expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
    }
    const full = new AuditLogFile({ path: "/dev/full" });
    expect(() => full.write(lines(event("x")))).toThrow(/cannot write the audit log \/dev\/full: ENOSPC/);
    full.close();
  });
});
