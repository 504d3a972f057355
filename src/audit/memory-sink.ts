// An audit sink that keeps events in memory (tests, and `platform-ca/testing` for users checking their policies).
import type { AuditEvent } from "./event.js";
import type { AuditSink } from "./log-backend.js";

export class MemoryAuditSink implements AuditSink {
  readonly events: AuditEvent[] = [];
  /** When set, `write` throws it (to test that a request fails when its audit cannot be written). */
  failWith: Error | undefined;

  write(lines: string): void {
    if (this.failWith) throw this.failWith;
    for (const line of lines.split("\n")) if (line !== "") this.events.push(JSON.parse(line) as AuditEvent);
  }

  /** The events of one request, in stage order. */
  byId(auditID: string): AuditEvent[] {
    return this.events.filter((e) => e.auditID === auditID);
  }

  close(): void {}
}
