// Real processes for end-to-end tests and benchmarks: `platform-ca apiserver` (HTTPS, admin.conf) and `platform-ca controller`.
import { spawn, type ChildProcess } from "node:child_process";
import { request as httpsRequest } from "node:https";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupNames, type GroupNames } from "../../../src/api/group.js";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import { restConfigFromConnection } from "../../../src/client/connection-config.js";
import { createClient, type RestClient } from "../../../src/client/rest-client.js";
import { controllerResources, type ControllerResources } from "../../../src/controller/controllers/controller-set.js";
import { isPlatformError } from "../../../src/errors.js";
import { startProcess, type Proc } from "../../fixtures/process.js";
import { PLATFORM_CA, REPO } from "../../fixtures/repo.js";

// The same file runs from test/ (vitest) and from dist/test/ (benchmarks); the CLI is always the built one.
export const CLI = PLATFORM_CA;

/** The bootstrap token of the token file: a node agent asking for its first client certificate. */
export const BOOTSTRAP_TOKEN = "e2e-bootstrap-secret";

let startArgs: readonly string[] | undefined;

/**
 * The node flags `npm start` runs `platform-ca up` with (package.json's start script, between `node` and the CLI): the
 * servers here start as the Quick start starts them. Read once.
 */
export function startNodeArgs(): readonly string[] {
  if (startArgs) return startArgs;
  const start = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts.start!;
  const words = start.split(/\s+/);
  if (words[0] !== "node" || !words.includes("dist/src/cli/platform-ca.js")) throw new Error(`package.json's start script is not "node [flags] dist/src/cli/platform-ca.js up": ${start}`);
  return (startArgs = words.slice(1, words.indexOf("dist/src/cli/platform-ca.js")));
}

/** Spawns the CLI and waits (bounded) for `ready` on stdout; resolves with the process and the first capture group. */
function spawnCli(args: readonly string[], ready: RegExp): Promise<{ proc: Proc; match: string }> {
  // BENCH_NODE_ARGS adds node flags to the spawned processes (e.g. "--cpu-prof --cpu-prof-dir=DIR" to profile a bench).
  const nodeArgs = [...startNodeArgs(), ...(process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")];
  return startProcess(process.execPath, [...nodeArgs, CLI, ...args], ready, { env: { PLATFORM_LOG_LEVEL: "info" }, what: `platform-ca ${args[0]}` });
}

/**
 * GET on an HTTPS endpoint (the controllers' ops endpoint is self-signed: the server certificate is not checked) as
 * the administrator of `adminConfig`, with its client certificate (/metrics needs an identity the API server
 * authorizes); without credentials when it is undefined.
 */
export async function opsGet(adminConfig: string | undefined, url: string): Promise<{ readonly status: number; readonly text: string }> {
  const tls = adminConfig === undefined ? {} : (await restConfigFromConnection({ kubeconfig: adminConfig })).tls;
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { cert: tls.cert, key: tls.key, rejectUnauthorized: false, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end();
  });
}

export interface ControllerProc extends Proc {
  /** `https://127.0.0.1:PORT` of /healthz, /readyz and /metrics. */
  readonly ops: string;
}

export interface Cluster {
  readonly names: GroupNames;
  readonly dataDir: string;
  readonly address: string;
  readonly adminConfig: string;
  readonly caFiles: { readonly certFile: string; readonly keyFile: string };
  readonly apiserver: Proc;
  /** With `mode: "up"`: health and metrics of the embedded controllers, from the banner. */
  readonly controllersOps?: string;
  /** Resources as the administrator of admin.conf. */
  readonly admin: ControllerResources;
  /** Resources as a node agent with the bootstrap token. */
  readonly bootstrapper: ControllerResources;
  /** The client under `bootstrapper`, for what takes a RestClient (platformctl's waitForCertificate). */
  readonly bootstrapClient: RestClient;
  /**
   * Resources as node agent `i` (0 ≤ i < ClusterOptions.nodeTokens) with a bootstrap token of its own, so the approver
   * reviews each node's request separately; close() the client when done (connections are shared with `bootstrapper`).
   */
  nodeAgent(i: number): { readonly resources: ControllerResources; close(): void };
  /** Resources as whoever `token` (a bearer token) authenticates as; close() the client when done. */
  withToken(token: string): { readonly resources: ControllerResources; close(): void };
  /** Starts `platform-ca controller` against this server with the cluster CA and `args`. */
  startController(args?: readonly string[]): Promise<ControllerProc>;
  /** Stops the API server and starts it again on the same port and data directory (after `downMs`, then `whileDown`). */
  restartApiserver(downMs?: number, whileDown?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /**
   * `apiserver` (default): `platform-ca apiserver` alone, controllers started with startController(); `up`:
   * `platform-ca up`, the server with its embedded controllers (their ops address in `controllersOps`).
   */
  readonly mode?: "apiserver" | "up";
  /** Extra API server flags. */
  readonly apiserverArgs?: readonly string[];
  /** Client rate limit of the test's own clients (default unlimited). */
  readonly qps?: number;
  /** A directory to share with another cluster (data dir, token file): a second API server replica, e.g. on etcd. */
  readonly dir?: string;
  /** Bootstrap tokens of distinct node agents in the token file (default 0; see Cluster.nodeAgent). */
  readonly nodeTokens?: number;
}

const nodeToken = (i: number): string => `node-bootstrap-secret-${i}`;

export async function startCluster(o: ClusterOptions = {}): Promise<Cluster> {
  // Removed by stop(); no vitest hook here, as benchmarks run this file too.
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "platform-ca-e2e-"));
  const dataDir = join(dir, "data");
  const tokenFile = join(dir, "tokens.csv");
  const nodeLines = Array.from({ length: o.nodeTokens ?? 0 }, (_, i) => `${nodeToken(i)},system:bootstrap:node${i},node-uid-${i},"system:bootstrappers"\n`);
  writeFileSync(tokenFile, `${BOOTSTRAP_TOKEN},system:bootstrap:e2e001,e2e-bootstrap-uid,"system:bootstrappers"\n${nodeLines.join("")}`, { mode: 0o600 });
  const serve = (listen: string) =>
    spawnCli([o.mode ?? "apiserver", "--data-dir", dataDir, "--listen", listen, "--token-file", tokenFile, ...(o.apiserverArgs ?? [])], /API server listening on (https:\/\/\S+)/);
  let { proc: apiserver, match: address } = await serve("127.0.0.1:0");
  const controllersOps = /controllers {2}health and metrics on (https:\/\/\S+)/.exec(apiserver.stdout())?.[1];
  const adminConfig = join(dataDir, "admin.conf");
  const caFiles = { certFile: join(dataDir, "pki", "ca.crt"), keyFile: join(dataDir, "pki", "ca.key") };
  const names = groupNames();
  const clients: RestClient[] = [];
  // This server's own address: replicas sharing a data dir each rewrite admin.conf with theirs.
  const adminRest = { ...(await restConfigFromConnection({ kubeconfig: adminConfig, qps: o.qps ?? 0, burst: 1 })), server: address };
  const admin = createClient(adminRest, { groupSuffix: names.suffix });
  const caPem = readFileSync(caFiles.certFile, "latin1");
  const asNode = (token: string) => createClient({ ...adminRest, tls: { ca: caPem }, credentials: { type: "token", token } }, { groupSuffix: names.suffix });
  const node = asNode(BOOTSTRAP_TOKEN);
  clients.push(admin, node);
  const controllers: Proc[] = [];
  return {
    names,
    dataDir,
    address,
    adminConfig,
    caFiles,
    get apiserver() {
      return apiserver;
    },
    controllersOps,
    admin: controllerResources(admin, names),
    bootstrapper: controllerResources(node, names),
    bootstrapClient: node,
    nodeAgent(i: number) {
      return this.withToken(nodeToken(i));
    },
    withToken(token: string) {
      const client = asNode(token);
      return { resources: controllerResources(client, names), close: () => client.close() };
    },
    async startController(args = []) {
      const { proc, match } = await spawnCli(
        ["controller", "--platformconfig", adminConfig, "--cluster-signing-cert-file", caFiles.certFile, "--cluster-signing-key-file", caFiles.keyFile, "--bind-address", "127.0.0.1:0", "--client-ca-file", caFiles.certFile, ...args],
        /health and metrics on (https:\/\/\S+)/,
      );
      controllers.push(proc);
      return { ...proc, ops: match };
    },
    async restartApiserver(downMs = 0, whileDown?: () => Promise<void>) {
      await apiserver.stop();
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      await whileDown?.();
      ({ proc: apiserver } = await serve(new URL(address).host));
    },
    async stop() {
      await Promise.all(controllers.map((c) => c.stop()));
      for (const c of clients) c.close();
      await apiserver.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  } as Cluster;
}

/** Creates `csr`, retrying while the server is away; an object already there (an earlier attempt got through) counts as created. */
export async function createPersistently(resources: ControllerResources, csr: CertificateSigningRequest, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      await resources.csrs.create(csr);
      return;
    } catch (err) {
      if (isPlatformError(err, "ALREADY_EXISTS")) return;
      if (!(isPlatformError(err) && err.retryable) || Date.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** The value of one Prometheus sample (`name{labels}`) in a scrape, or 0 when absent. */
export { sample } from "../../fixtures/metrics-text.js";
