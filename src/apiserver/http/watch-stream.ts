// Streams a watch as newline-delimited JSON events over a chunked response, until timeout, error or client disconnect.
import type { ObjectFilter } from "../selectors.js";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ApiObject } from "../../api/meta.js";
import { PlatformError, toPlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import { parseRevision } from "../registry/list.js";
import type { WatchSource } from "../registry/watch.js";
import type { ListParams } from "./query.js";
import { statusOf } from "./status.js";

export interface WatchStreamOptions {
  readonly source: WatchSource;
  readonly prefix: string;
  readonly params: ListParams;
  readonly filter: ObjectFilter | undefined;
  /** Only the object of this name, when the field selector requires one (the cache offers only that object's events). */
  readonly name?: string;
  /** Re-encodes event objects (Table output for kubectl `get -w`). */
  readonly convert: ((obj: ApiObject) => unknown) | undefined;
  readonly clock: Clock;
  readonly timeoutSeconds: number;
  readonly logger: Logger;
}

interface WatchStart {
  readonly fromRevision: number;
  readonly sendInitialEvents: boolean;
}

/** Upstream's rules for where a watch starts, checked before any byte is streamed (violations are 400s). */
export function watchStart(p: ListParams): WatchStart {
  const bad = (m: string) => new PlatformError("BAD_REQUEST", m);
  const rv = p.resourceVersion ?? "";
  if (p.sendInitialEvents !== undefined) {
    if (p.resourceVersionMatch !== "NotOlderThan") throw bad("sendInitialEvents requires resourceVersionMatch=NotOlderThan");
  } else if (p.resourceVersionMatch !== undefined) {
    throw bad("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
  }
  const fromRevision = rv === "" ? 0 : parseRevision(rv);
  // Unset or "0" means: the current state as ADDED events, then changes (legacy "get state and start at most recent").
  const sendInitialEvents = p.sendInitialEvents ?? fromRevision === 0;
  return { fromRevision, sendInitialEvents };
}

export async function streamWatch(req: FastifyRequest, reply: FastifyReply, o: WatchStreamOptions): Promise<void> {
  const start = watchStart(o.params);
  const abort = new AbortController();
  const res = reply.raw;
  // Ends the watch when the client goes away, so its cache subscription is released at once.
  const onClose = () => abort.abort();
  req.raw.socket?.once("close", onClose);
  res.once("close", onClose);
  const cancelTimer = o.timeoutSeconds > 0 ? o.clock.setTimer(o.timeoutSeconds * 1000, () => abort.abort()) : undefined;
  reply.hijack();
  res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" });
  res.flushHeaders();
  const writeText = (text: string) => {
    if (!res.writableEnded && !res.destroyed) res.write(text);
  };
  const write = (line: unknown) => writeText(`${JSON.stringify(line)}\n`);
  try {
    const events = o.source.watch({
      prefix: o.prefix,
      fromRevision: start.fromRevision,
      sendInitialEvents: start.sendInitialEvents,
      allowBookmarks: o.params.allowWatchBookmarks,
      filter: o.filter,
      ...(o.name !== undefined && { name: o.name }),
      signal: abort.signal,
    });
    for await (const ev of events) {
      if (abort.signal.aborted) break;
      const plain = ev.type === "BOOKMARK" || ev.type === "ERROR";
      if (o.convert && !plain) write({ type: ev.type, object: o.convert(ev.object as ApiObject) });
      // The fan-out fast path: the stored text with resourceVersion spliced in, no JSON round trip per watcher.
      else if (ev.json) writeText(`{"type":"${ev.type}","object":${ev.json()}}\n`);
      else write({ type: ev.type, object: ev.object });
    }
  } catch (err) {
    if (!abort.signal.aborted) {
      const error = toPlatformError(err);
      if (error.code === "INTERNAL") o.logger.error({ err }, "watch failed");
      write({ type: "ERROR", object: statusOf(error) });
    }
  } finally {
    cancelTimer?.();
    req.raw.socket?.off("close", onClose);
    res.off("close", onClose);
    abort.abort();
    if (!res.writableEnded) res.end();
  }
}
