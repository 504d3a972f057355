// Takes the API server's listen address before anything else happens, so a start that cannot listen changes nothing.
import { createServer, type Server } from "node:net";
import { PlatformError } from "../errors.js";

/** A bound listen address, held until the server itself listens on it. */
export interface HeldAddress {
  readonly host: string;
  /** The port bound (the one picked when 0 was asked for). */
  readonly port: number;
  /** Frees the address for the real server; safe to call more than once. */
  release(): Promise<void>;
}

const show = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`;

/** One line saying why `host:port` cannot be listened on and how to pick another with `flag`. */
export function listenFailure(err: NodeJS.ErrnoException, host: string, port: number, flag: string): PlatformError {
  const at = show(host, port);
  const other = show(host, port > 0 && port < 65535 ? port + 1 : 0);
  const why =
    err.code === "EADDRINUSE" ? `port ${port} on ${host} is already in use (another API server, or a local Kubernetes?)`
    : err.code === "EACCES" ? `no permission to listen on ${at} (ports below 1024 need privileges)`
    : err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND" ? `${host} is not an address of this machine`
    : `cannot listen on ${at}: ${err.message}`;
  return new PlatformError("IO_ERROR", `${why}: pick another address with ${flag} (e.g. ${flag} ${other}; port 0 picks a free one)`, { cause: err });
}

/**
 * Binds `host:port` and keeps it bound, so a start whose address is taken fails before the data directory is created
 * or changed; the server listens on the same address once release() has freed it, a moment later.
 */
export async function holdListenAddress(host: string, port: number, flag = "--listen"): Promise<HeldAddress> {
  // A client that connects meanwhile (one retrying against a restarting server) is turned away at once: an accepted
  // connection left open would keep close() — and so the real server's listen — waiting for ever.
  const server: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => reject(listenFailure(err, host, port, flag)));
    server.listen({ host, port, exclusive: true }, () => resolve());
  });
  const bound = server.address();
  let released: Promise<void> | undefined;
  return {
    host,
    port: typeof bound === "object" && bound ? bound.port : port,
    release: () => (released ??= new Promise<void>((resolve) => server.close(() => resolve()))),
  };
}
