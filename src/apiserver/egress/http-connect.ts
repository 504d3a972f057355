// HTTP CONNECT through a proxy: reach the proxy (TCP, TLS with a client certificate, or a Unix socket), ask for a tunnel.
import { connect as netConnect, isIP, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { PlatformError } from "../../errors.js";

/** How the proxy is reached, with the TLS material already read (files are read once, at start). */
export type ProxyEndpoint =
  | { readonly kind: "tcp"; readonly host: string; readonly port: number; readonly url: string }
  | { readonly kind: "tls"; readonly host: string; readonly port: number; readonly url: string; readonly ca?: string; readonly cert: string; readonly key: string }
  | { readonly kind: "uds"; readonly path: string; readonly url: string };

/** The longest proxy answer head read before giving up (a proxy answers a CONNECT with a few lines). */
const MAX_HEAD_BYTES = 16 * 1024;

/** A socket to the proxy itself, connecting (TLS: the proxy's certificate is verified against `ca` or the system roots). */
function openProxySocket(proxy: ProxyEndpoint): Socket {
  if (proxy.kind === "uds") return netConnect({ path: proxy.path });
  if (proxy.kind === "tcp") return netConnect({ host: proxy.host, port: proxy.port });
  return tlsConnect({ host: proxy.host, port: proxy.port, ...(isIP(proxy.host) === 0 && { servername: proxy.host }), ...(proxy.ca !== undefined && { ca: proxy.ca }), cert: proxy.cert, key: proxy.key, ALPNProtocols: ["http/1.1"] });
}

/** Resolves once `socket` emitted `event`; rejects on its first error. */
function whenReady(socket: Socket, event: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    socket.once(event, () => {
      socket.off("error", onError);
      resolve();
    });
    socket.once("error", onError);
  });
}

/**
 * Reads the proxy's answer head; resolves with its status line, putting back any bytes that followed it. Read in
 * paused mode ('readable'), so nothing flows away before the caller (or a TLS layer over the tunnel) takes the socket.
 */
function readAnswer(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0);
    const done = (err?: Error, status?: string) => {
      socket.off("readable", onReadable).off("error", onError).off("end", onEnd);
      if (err) reject(err);
      else resolve(status!);
    };
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        if (end !== -1) {
          const rest = head.subarray(end + 4);
          if (rest.length > 0) socket.unshift(rest);
          return done(undefined, head.subarray(0, head.indexOf("\r\n")).toString("latin1"));
        }
        if (head.length > MAX_HEAD_BYTES) return done(new Error(`the proxy's answer head is longer than ${MAX_HEAD_BYTES} bytes`));
      }
    };
    const onError = (err: Error) => done(err);
    const onEnd = () => done(new Error("the proxy closed the connection before answering"));
    socket.on("readable", onReadable).once("error", onError).once("end", onEnd);
  });
}

const hostPort = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`;

/**
 * A tunnel to `host:port` through `proxy`: the returned socket carries the caller's bytes to the target (TLS to the
 * target, if any, is the caller's, over this socket). Fails with IO_ERROR naming the proxy and the target.
 */
export async function httpConnect(proxy: ProxyEndpoint, host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<Socket> {
  const target = hostPort(host, port);
  const fail = (why: string, cause?: unknown) => new PlatformError("IO_ERROR", `cannot reach ${target} through the proxy ${proxy.url}: ${why}`, cause === undefined ? {} : { cause });
  if (signal?.aborted) throw fail("aborted");
  const socket = openProxySocket(proxy);
  const timer = setTimeout(() => socket.destroy(fail(`no tunnel within ${timeoutMs} ms`)), timeoutMs);
  const onAbort = () => socket.destroy(fail("aborted"));
  signal?.addEventListener("abort", onAbort, { once: true });
  const failure = (err: NodeJS.ErrnoException) => (err instanceof PlatformError ? err : fail(err.message, err));
  try {
    await whenReady(socket, proxy.kind === "tls" ? "secureConnect" : "connect").catch((err: NodeJS.ErrnoException) => {
      throw failure(err);
    });
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    const status = await readAnswer(socket).catch((err: NodeJS.ErrnoException) => {
      throw failure(err);
    });
    const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(status);
    if (!m) throw fail(`not an HTTP answer: ${JSON.stringify(status.slice(0, 80))}`);
    if (m[1] !== "200") throw fail(`the proxy answered ${m[1]}${m[2] ? ` ${m[2]}` : ""}`);
    return socket;
  } catch (err) {
    socket.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}
