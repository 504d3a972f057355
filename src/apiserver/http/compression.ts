// Response compression as upstream's API server does it (APIResponseCompression, on by default since 1.16): a body
// over 128 KiB goes gzipped at level 1 when the request's Accept-Encoding names gzip; smaller bodies and watch streams
// go as they are.
import type { FastifyReply, FastifyRequest } from "fastify";
import { gzip } from "node:zlib";

/** Upstream's defaultGzipThresholdBytes: a body must be larger than this to be compressed. */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;
/** Upstream's defaultGzipContentEncodingLevel: the least CPU for nearly the best ratio on JSON lists. */
const GZIP_LEVEL = 1;

/**
 * Whether an Accept-Encoding header asks for gzip, read as upstream's negotiateContentEncoding reads it: one of the
 * comma-separated tokens, trimmed, is exactly `gzip` (so `gzip;q=0.5` or `GZIP` is another token, not gzip).
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  // Node hands repeated headers over joined with ", " (Go's Header.Get would read only the first line): any token counts.
  const text = Array.isArray(header) ? header.join(",") : header;
  return text.split(",").some((token) => token.trim() === "gzip");
}

/**
 * The onSend hook: compresses a whole body (text or bytes) over the threshold for a client that accepts gzip. Runs
 * after the audit hook, which records the body as the handler produced it. A body that already has an encoding, or
 * an answer that carries none (204, 304, a HEAD), is left alone. It runs for every answer, the in-thread channel's
 * included, so the common case (no gzip asked, or a small body) answers at once: no promise, and the body's size
 * measured only for a client that asked.
 */
export function compressResponse(req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void): void {
  if (!acceptsGzip(req.headers["accept-encoding"]) || (typeof payload !== "string" && !Buffer.isBuffer(payload))) return done(null, payload);
  const size = typeof payload === "string" ? Buffer.byteLength(payload) : payload.length;
  if (size <= GZIP_THRESHOLD_BYTES || req.method === "HEAD" || reply.statusCode === 204 || reply.statusCode === 304 || reply.hasHeader("content-encoding")) return done(null, payload);
  // On libuv's pool: a list of thousands of objects compresses without holding the event loop.
  gzip(payload, { level: GZIP_LEVEL }, (err, compressed) => {
    if (err) return done(err);
    reply.header("Content-Encoding", "gzip");
    const vary = reply.getHeader("vary");
    reply.header("Vary", vary === undefined ? "Accept-Encoding" : `${String(vary)}, Accept-Encoding`);
    done(null, compressed);
  });
}
