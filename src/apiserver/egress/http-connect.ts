// HTTP CONNECT through an egress proxy reached over TCP, TLS with a client certificate, or a Unix socket.
import { isIP, type Socket } from "node:net";
import { openTunnel } from "../../client/proxy-tunnel.js";
import { PlatformError } from "../../errors.js";

/** How the proxy is reached, with the TLS material already read (files are read once, at start). */
export type ProxyEndpoint =
  | { readonly kind: "tcp"; readonly host: string; readonly port: number; readonly url: string }
  | { readonly kind: "tls"; readonly host: string; readonly port: number; readonly url: string; readonly ca?: string; readonly cert: string; readonly key: string }
  | { readonly kind: "uds"; readonly path: string; readonly url: string };

const hostPort = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`;

/**
 * A tunnel to `host:port` through `proxy`: the returned socket carries the caller's bytes to the target (TLS to the
 * target, if any, is the caller's, over this socket). Fails with IO_ERROR naming the proxy and the target.
 */
export async function httpConnect(proxy: ProxyEndpoint, host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<Socket> {
  const target = hostPort(host, port);
  const via =
    proxy.kind === "uds"
      ? { proxy: { socketPath: proxy.path } }
      : proxy.kind === "tcp"
        ? { proxy: { host: proxy.host, port: proxy.port } }
        : {
            secure: true,
            // The proxy's certificate is checked against caBundle (the system roots without one); ours is tlsConfig's.
            proxy: { host: proxy.host, port: proxy.port, ...(isIP(proxy.host) === 0 && { servername: proxy.host }), ...(proxy.ca !== undefined && { ca: proxy.ca }), cert: proxy.cert, key: proxy.key },
          };
  try {
    return await openTunnel(target, { ...via, proxyName: proxy.url, timeoutMs, ...(signal && { signal }) });
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot reach ${target} through the egress proxy: ${(err as Error).message}`, { cause: err });
  }
}
