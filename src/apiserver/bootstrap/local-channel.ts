// The co-located controllers' in-thread channel to the server of `platform-ca up`: requests handed over a MessagePort
// as objects, no socket, no HTTP parsing on either side. Each still goes through the server's request listeners (the
// same routes and hooks: authentication, authorization, admission, audit, metrics, tracing) as one on the socket or
// the TLS port; a request without the controller identity's token is a 401 here as anywhere.
import type { Server } from "node:http";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import type { Logger } from "../../logger.js";
import { ChannelOutbox, channelMessages, transferable, type ChannelAnswer, type ChannelRequest } from "../../client/channel-transport.js";
import { LocalRequest, LocalResponse } from "../http/local-exchange.js";

export interface LocalChannels {
  /** A new channel: the returned port is the client's end (transfer it to the thread that sends the requests). */
  open(): MessagePort;
  /** Requests in flight on every channel, as a count (what `close` ends). */
  readonly inFlight: number;
  /** Closes every channel: requests in flight end as if their client had left, new ones fail on the client's side. */
  close(): void;
}

function isAbort(m: unknown): m is { readonly id: number; readonly abort: true } {
  const a = m as { id?: unknown; abort?: unknown } | null;
  return typeof a === "object" && a !== null && typeof a.id === "number" && a.abort === true;
}

function isRequest(m: unknown): m is ChannelRequest {
  const r = m as Partial<ChannelRequest> | null;
  return typeof r === "object" && r !== null && typeof r.id === "number" && typeof r.method === "string" && typeof r.path === "string" && typeof r.headers === "object" && r.headers !== null && (r.body === undefined || r.body instanceof Uint8Array);
}

/** A body or chunk to post: a string as it is; bytes as a copy of their own (the server's buffer may be shared or reused). */
function carried(body: Uint8Array | string): { readonly value: Uint8Array | string; readonly transfer: readonly ArrayBuffer[] } {
  if (typeof body === "string") return { value: body, transfer: [] };
  const own = transferable(body);
  return { value: own.bytes, transfer: own.transfer };
}

/** Channels into `server`'s request listeners (node's HTTP server of the API server, fastify's `app.server`). */
export function serveLocalChannels(server: Server, logger: Logger): LocalChannels {
  const ports = new Set<MessagePort>();
  let inFlight = 0;
  let closed = false;
  const open = (): MessagePort => {
    if (closed) throw new Error("the local channels are closed");
    const { port1, port2 } = new MessageChannel();
    /** What ends each request in flight as a dropped connection would: the request's events, then the response's. */
    const exchanges = new Map<number, () => void>();
    // An answer that cannot be posted (never one of this server's: text or bytes): its client waits until it gives up.
    const outbox = new ChannelOutbox<ChannelAnswer>(port1, (m, err) => logger.error({ err, id: m.id }, "the local channel could not post an answer"));
    const serve = (m: unknown): void => {
      if (isAbort(m)) return void exchanges.get(m.id)?.();
      if (!isRequest(m)) {
        logger.warn({ message: typeof m }, "the local channel dropped a message that is not a request");
        return;
      }
      const req = new LocalRequest(m);
      const id = m.id;
      /** A streamed answer's text chunk not yet posted: the next write of the same turn is added to it. */
      let open: { readonly message: { id: number; chunk: string }; readonly batch: number } | undefined;
      const res = new LocalResponse(
        m.method,
        (status, headers, body) => {
          const c = carried(body);
          outbox.post({ id, status, headers, body: c.value }, c.transfer);
        },
        {
          // A watch: its head now, its events as they are written (one turn's together, as the outbox posts them).
          head: (status, headers) => outbox.post({ id, status, headers, stream: true }),
          chunk: (chunk) => {
            if (typeof chunk !== "string") {
              open = undefined;
              const c = carried(chunk);
              return outbox.post({ id, chunk: c.value }, c.transfer);
            }
            // The writes of one turn (a watch's events) cross as one chunk: one read for the client, as a socket's.
            if (open !== undefined && open.batch === outbox.posted) return void (open.message.chunk += chunk);
            const message = { id, chunk };
            open = { message, batch: outbox.posted };
            outbox.post(message);
          },
          end: () => outbox.post({ id, end: true }),
        },
      );
      let abandoned = false;
      exchanges.set(id, () => {
        abandoned = true;
        req.abort();
        res.destroy();
      });
      inFlight++;
      res.once("close", () => {
        exchanges.delete(id);
        inFlight--;
        // The server gave up on it (an error after the head, say): the client hears a reset, as from a socket.
        if (!res.answered && !abandoned) outbox.post({ id, reset: true });
      });
      server.emit("request", req, res);
    };
    port1.on("message", (posted: unknown) => {
      for (const m of channelMessages(posted)) serve(m);
    });
    // The other end closed (its thread ended): what it asked for is abandoned, as with a dropped connection.
    port1.once("close", () => {
      ports.delete(port1);
      for (const end of [...exchanges.values()]) end();
    });
    // Only the requests keep the server's process alive, not a channel that waits for them.
    port1.unref();
    ports.add(port1);
    return port2;
  };
  return {
    open,
    get inFlight() {
      return inFlight;
    },
    close() {
      closed = true;
      for (const port of [...ports]) port.close();
    },
  };
}
