// The API servers the benchmarks drive, behind one shape: `platform-ca apiserver` with TLS, client-certificate
// authentication and RBAC as a node (what users run), or `--insecure-local` over plain HTTP (the extra row).
import https from "node:https";
import { Agent } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext, type SecureContext } from "node:tls";
import { groupNames } from "../../src/api/group.js";
import { startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { csrObject } from "../fixtures/csr.js";
import { clusterClientTls } from "./identity.js";
import { httpCall, startServer, stopServer } from "./insecure-server.js";
import { cpuSeconds } from "./measure.js";

export interface ApiTarget {
  readonly name: string;
  readonly base: string;
  /** The CSR collection path. */
  readonly path: string;
  /** The server process (changes when a secure target's server restarts). */
  pid(): number;
  call(method: string, path: string, body?: string): Promise<{ status: number; text: string }>;
  /** A CSR object's JSON for `pem`, named `name`, labelled batch=`batch`. */
  body(name: string, pem: string, batch: string): string;
  /** The client certificate's context for further connections (secure target only). */
  readonly secureContext?: SecureContext;
  /** The secure target's cluster (data directory, restarts). */
  readonly cluster?: Cluster;
  stop(): Promise<void>;
}

const csrBody = (names: ReturnType<typeof groupNames>) => (name: string, pem: string, batch: string) =>
  JSON.stringify(csrObject({ names, name, metadata: { labels: { batch } }, request: pem, expirationSeconds: 86400 }));

/**
 * `platform-ca apiserver` (HTTPS), called as `system:node:<identity>` in `system:nodes`: RBAC decides every request.
 * `apiserverArgs`: extra server flags (a storage backend), named by `name`; `stopped` runs after the server stops.
 */
export async function secureTarget(concurrency: number, identity = "bench", o: { apiserverArgs?: readonly string[]; name?: string; stopped?: () => Promise<void> } = {}): Promise<ApiTarget> {
  const cluster = await startCluster({ ...(o.apiserverArgs && { apiserverArgs: o.apiserverArgs }) });
  const secureContext = createSecureContext(await clusterClientTls(cluster.dataDir, `system:node:${identity}`, ["system:nodes"]));
  const agent = new https.Agent({ keepAlive: true, maxSockets: concurrency, secureContext });
  return {
    name: o.name ?? "TLS + client certificate + RBAC",
    base: cluster.address,
    path: `/apis/${cluster.names.certificates}/v1/certificatesigningrequests`,
    pid: () => cluster.apiserver.child.pid!,
    call: (method, path, body) => httpCall(agent as unknown as Agent, cluster.address, method, path, body),
    body: csrBody(cluster.names),
    secureContext,
    cluster,
    async stop() {
      agent.destroy();
      await cluster.stop();
      await o.stopped?.();
    },
  };
}

/** `platform-ca apiserver --insecure-local` (plain HTTP, no authentication, everything allowed). */
export async function insecureTarget(concurrency: number): Promise<ApiTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-apiserver-"));
  const { child, base } = await startServer(dataDir);
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const names = groupNames();
  return {
    name: "insecure-local (no TLS, authn or RBAC)",
    base,
    path: `/apis/${names.certificates}/v1/certificatesigningrequests`,
    pid: () => child.pid!,
    call: (method, path, body) => httpCall(agent, base, method, path, body),
    body: csrBody(names),
    async stop() {
      agent.destroy();
      await stopServer(child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Sends every body as a create, `concurrency` callers; resolves once all are answered (201, or it throws). */
export async function createAll(target: Pick<ApiTarget, "call" | "path">, bodies: readonly string[], concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const r = await target.call("POST", target.path, bodies[i]);
      if (r.status !== 201) throw new Error(`create answered ${r.status}: ${r.text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** createAll with the wall time and the server's CPU it took. */
export async function timedCreates(target: ApiTarget, bodies: readonly string[], concurrency: number): Promise<{ seconds: number; cpu: number }> {
  const cpu = cpuSeconds(target.pid());
  const t = performance.now();
  await createAll(target, bodies, concurrency);
  return { seconds: (performance.now() - t) / 1000, cpu: cpuSeconds(target.pid()) - cpu };
}
