// Who sent a request: the pipeline's authentication, and `system:anonymous` on the public health paths, as upstream.
import { performance } from "node:perf_hooks";
import type { TLSSocket } from "node:tls";
import type { FastifyRequest } from "fastify";
import type { UserInfo } from "../../api/meta.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { anonymousUser } from "../auth/identity.js";
import { IMPERSONATE_PREFIX } from "../auth/impersonation.js";
import { peerCertificateChain } from "../auth/authn-x509.js";
import type { ApiServerMetrics } from "../metrics.js";
import type { Pipeline } from "../pipeline.js";

/** Whether any header name starts with `Impersonate-` (any case); `rawHeaders` alternates names and values. */
function impersonates(rawHeaders: readonly string[]): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length > IMPERSONATE_PREFIX.length && (name.charCodeAt(0) | 0x20) === 0x69 && name.slice(0, IMPERSONATE_PREFIX.length).toLowerCase() === IMPERSONATE_PREFIX) return true;
  }
  return false;
}

/**
 * Paths a request without any credentials reaches as `system:anonymous` even when anonymous access is off, as
 * upstream's AuthenticationConfiguration `anonymous.conditions` allow: RBAC then decides (the bootstrap
 * `system:public-info-viewer` role grants them to `system:unauthenticated`). Exact paths, as upstream matches them.
 */
export const ANONYMOUS_PATHS: ReadonlySet<string> = new Set(["/healthz", "/livez", "/readyz"]);

/** Whether the request carries anything that identifies its sender: an Authorization header or a client certificate. */
function presentsCredentials(req: FastifyRequest, tlsSocket: TLSSocket | undefined): boolean {
  return req.headers.authorization !== undefined || peerCertificateChain(tlsSocket).length > 0;
}

/**
 * The requesting user; 401 when the request carries no acceptable credentials, except a request to one of
 * ANONYMOUS_PATHS that carries none at all (nor impersonation headers): it runs as `system:anonymous`. Bad
 * credentials are never anonymous.
 */
export async function authenticate(req: FastifyRequest, o: { readonly pipeline: Pipeline; readonly metrics: ApiServerMetrics }): Promise<UserInfo> {
  const started = performance.now();
  const tlsSocket = (req.raw.socket as TLSSocket).encrypted ? (req.raw.socket as TLSSocket) : undefined;
  const impersonating = impersonates(req.raw.rawHeaders);
  // Made only when refusing: an error's stack trace costs more than the rest of authenticating a token.
  let refused: unknown;
  try {
    const user = await o.pipeline.authenticate({
      headers: req.headers,
      // Node builds headersDistinct on first use; only a request that impersonates needs it.
      headersDistinct: impersonating ? req.raw.headersDistinct : {},
      tlsSocket,
      remoteAddress: req.ip,
      path: req.url.split("?")[0]!,
    });
    if (user) {
      o.metrics.authenticated("success", started);
      return user;
    }
  } catch (err) {
    // Anything but a 401 (an impersonation refused) comes after the sender was authenticated.
    if (!isPlatformError(err, "UNAUTHORIZED")) {
      o.metrics.authenticated("success", started);
      throw err;
    }
    refused = err;
  }
  const presented = presentsCredentials(req, tlsSocket);
  if (!presented && !impersonating && ANONYMOUS_PATHS.has(req.url.split("?")[0]!)) {
    o.metrics.authenticated("success", started);
    return anonymousUser();
  }
  o.metrics.authenticated(presented ? "error" : "failure", started);
  throw refused ?? new PlatformError("UNAUTHORIZED", "Unauthorized");
}
