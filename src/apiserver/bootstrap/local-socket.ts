// The co-located controllers' connection to the server of `platform-ca up`: plain HTTP on a unix-domain socket in the
// data directory (0600), so their requests do not pay TLS, still authenticated, authorized and admitted like any other.
import { randomBytes } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { MessagePort } from "node:worker_threads";
import type { FastifyInstance } from "fastify";
import { CONTROLLER_USER } from "../auth/bootstrap-policy.js";
import type { CredentialEntry } from "../auth/authn-token-file.js";
import type { Logger } from "../../logger.js";

export const LOCAL_SOCKET_FILE = "controller.sock";
/** sun_path holds 108 bytes on Linux (104 on BSDs): a longer path cannot be bound. */
const MAX_SOCKET_PATH = 100;

/** Where the co-located controllers connect and the bearer token that makes them the controller identity. */
export interface LocalConnection {
  readonly socketPath: string;
  readonly token: string;
  /**
   * The client end of an in-thread channel (local-channel.ts) for whole-body requests, when the server opened one for
   * this thread; watches use the socket.
   */
  readonly channel?: MessagePort;
}

/**
 * A fresh connection for this run: the token is random, lives only in this process's memory (never in a file) and
 * authenticates as CONTROLLER_USER, whose RBAC role bounds it. Undefined when the data directory's path is too long
 * for a socket (the controllers then use HTTPS on loopback, as before).
 */
export function newLocalConnection(dataDir: string): { connection: LocalConnection; credential: CredentialEntry } | undefined {
  const socketPath = join(dataDir, LOCAL_SOCKET_FILE);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) return undefined;
  const token = randomBytes(32).toString("base64url");
  return { connection: { socketPath, token }, credential: { secret: token, user: { username: CONTROLLER_USER, groups: [] }, line: 0 } };
}

/**
 * Serves `app` on the socket: every request goes through the same routes and hooks (authentication, authorization,
 * admission, audit) as one on the TLS port; a request without the token is a 401 there as anywhere.
 */
export async function serveLocalSocket(app: FastifyInstance, socketPath: string, logger: Logger): Promise<{ close(): Promise<void> }> {
  // A process that was killed leaves its socket file behind; bind would fail on it.
  rmSync(socketPath, { force: true });
  // Handed to the main server's request listeners, not to app.routing: what wraps them (request tracing) applies here too.
  const server: Server = createServer((req, res) => app.server.emit("request", req, res));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // The data directory is 0700 already; the socket itself is the owner's only too.
  chmodSync(socketPath, 0o600);
  logger.info({ socket: socketPath }, "local socket for the co-located controllers listening");
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          rmSync(socketPath, { force: true });
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
