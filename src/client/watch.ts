// Watch streams: newline-delimited JSON events parsed as chunks arrive; ERROR events become typed errors.
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ApiObject } from "../api/meta.js";
import { PlatformError } from "../errors.js";
import { errorFromResponse, type CallContext } from "./status-errors.js";
import type { WatchEvent, WatchEventType } from "./types.js";

const TYPES: ReadonlySet<string> = new Set<WatchEventType>(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]);
/** One event line may not exceed this: a bound on memory against a server that never sends a newline. */
export const MAX_EVENT_BYTES = 64 * 1024 * 1024;

function streamError(message: string, ctx: CallContext, cause?: unknown): PlatformError {
  return new PlatformError("IO_ERROR", `watch ${ctx.path}: ${message}`, { retryable: true, cause, details: { sent: true } });
}

/** One event line; an ERROR event is thrown as the error its Status maps to (410 → GONE). */
export function parseWatchLine<T extends ApiObject>(line: string, ctx: CallContext): WatchEvent<T> {
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch (err) {
    throw streamError(`the server sent a line that is not JSON (${(err as Error).message})`, ctx, err);
  }
  const e = event as { type?: unknown; object?: unknown };
  if (typeof event !== "object" || event === null || typeof e.type !== "string" || !TYPES.has(e.type) || typeof e.object !== "object" || e.object === null) {
    throw streamError(`the server sent an event without a known type and an object: ${line.slice(0, 120)}`, ctx);
  }
  if (e.type === "ERROR") {
    const status = e.object as { code?: unknown };
    throw errorFromResponse(typeof status.code === "number" ? status.code : 500, e.object, ctx);
  }
  return event as WatchEvent<T>;
}

/**
 * Yields the events of a watch response body until the server ends it (normal end), `signal` aborts
 * (normal end, the socket is closed), or a broken line, ERROR event or broken connection (thrown).
 * Leaving the loop early also closes the socket.
 */
export async function* watchEvents<T extends ApiObject>(open: () => Promise<Readable>, signal: AbortSignal, ctx: CallContext): AsyncGenerator<WatchEvent<T>> {
  let body: Readable;
  try {
    body = await open();
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  }
  // Node's own UTF-8 decoder: TextDecoder goes through ICU with a fresh UTF-16 buffer per chunk, several times the cost.
  const decoder = new StringDecoder("utf8");
  let buffer = "";
  let scanFrom = 0;
  try {
    try {
      for await (const chunk of body) {
        buffer += decoder.write(chunk as Buffer);
        for (let nl = buffer.indexOf("\n", scanFrom); nl >= 0; nl = buffer.indexOf("\n")) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line.trim() !== "") yield parseWatchLine<T>(line, ctx);
          if (signal.aborted) return;
        }
        // The next search starts where this one ended: a large object across many chunks is scanned once.
        scanFrom = buffer.length;
        if (buffer.length > MAX_EVENT_BYTES) throw streamError(`an event is larger than ${MAX_EVENT_BYTES} bytes`, ctx);
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof PlatformError) throw err;
      throw streamError(`the connection broke: ${(err as Error).message}`, ctx, err);
    }
    buffer += decoder.end();
    if (buffer.trim() !== "") {
      // Servers end every event with a newline; text left over means the stream was cut inside one.
      const last = buffer;
      let event: WatchEvent<T>;
      try {
        event = parseWatchLine<T>(last, ctx);
      } catch (err) {
        if (err instanceof PlatformError && err.code !== "IO_ERROR") throw err;
        throw streamError("the stream ended in the middle of an event", ctx, err);
      }
      yield event;
    }
  } finally {
    body.destroy();
  }
}
