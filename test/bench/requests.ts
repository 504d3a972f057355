// bench:requests — what one request of each kind the CSR flow makes costs `platform-ca apiserver` in CPU, against a
// bare node:https server (client certificates verified, a JSON body parsed, a CSR-sized JSON answer) on the same
// machine: the transport's share and the server's own. Requests come as the controllers' user or as a node (client
// certificates outside system:masters, so RBAC decides each one), or with the bearer token of a real client (a
// ServiceAccount's from TokenRequest, a node agent's bootstrap token Secret); every CSR create with CSR bytes of its
// own; the same creates against `--insecure-local` are the extra row. The load comes from a separate process (a bare
// node:https client), except for one row sent through the platform-ca client to show that client's own cost.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CONTROLLER_USER } from "../../src/apiserver/auth/bootstrap-policy.js";
import { createClient, restConfigFromConnection } from "../../src/client/index.js";
import { startCluster } from "../controller/controllers/cluster.js";
import { csrObject, newCsrObject } from "../fixtures/csr.js";
import { clusterClientTls, type ClientTls } from "./identity.js";
import { startServer, stopServer } from "./insecure-server.js";
import { cpuSeconds, envNumber, percentile, timedLoop } from "./measure.js";
import { CSR_PLACEHOLDER, measureLoad, type LoadResult, type LoadSpec } from "./request-load.js";

const SECONDS = envNumber("BENCH_SECONDS", 2);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 32);
/**
 * Distinct CSRs the load process makes per window of a CSR row (it fails, rather than repeat one, should they run out):
 * 8,000 per second of the window, twice what the insecure server creates here.
 */
const CSR_POOL = envNumber("BENCH_CSR_POOL", SECONDS * 8_000);
/** Only the rows whose name matches (a regular expression; the peer's row is always measured), to profile one kind alone. */
const ROW_FILTER = process.env.BENCH_ROWS ? new RegExp(process.env.BENCH_ROWS, "i") : undefined;
const here = fileURLToPath(new URL(".", import.meta.url));

/** Runs the load process against `url` and returns its figures with the target process's CPU per request. */
function measure(pid: number, url: string, method: string, body: unknown, tls: LoadSpec["tls"], distinctCsrs?: number, bearer?: string): Promise<LoadResult & { serverMicros: number }> {
  return measureLoad(pid, { url, method, tls, concurrency: CONCURRENCY, seconds: SECONDS, ...(body === undefined ? {} : { body: JSON.stringify(body) }), ...(distinctCsrs && { distinctCsrs }), ...(bearer !== undefined && { bearer }) });
}

/**
 * The two bearer tokens of real clients, made through the API as an administrator would: a node agent's bootstrap
 * token (a Secret in the bootstrap tokens' namespace, as `platform-ca token create` or kubeadm makes it) and a
 * ServiceAccount's token from the TokenRequest API (what a controller in a pod sends).
 */
async function bearerTokens(c: Awaited<ReturnType<typeof startCluster>>): Promise<{ bootstrap: string; serviceAccount: string }> {
  const admin = createClient(await restConfigFromConnection({ kubeconfig: c.adminConfig, qps: 0, burst: 1 }));
  try {
    const { namespace, secretType } = c.names.bootstrapTokens;
    const expiration = new Date(Date.now() + 3600_000).toISOString();
    const data = { "token-id": "bench1", "token-secret": "0123456789abcdef", expiration, "usage-bootstrap-authentication": "true" };
    await admin.request("POST", `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: "v1", kind: "Secret", type: secretType, metadata: { name: "bootstrap-token-bench1", namespace }, stringData: data });
    await admin.request("POST", "/api/v1/namespaces/default/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "bench" } });
    const issued = await admin.request<{ status: { token: string } }>("POST", "/api/v1/namespaces/default/serviceaccounts/bench/token", { apiVersion: `${c.names.authentication}/v1`, kind: "TokenRequest", spec: {} });
    return { bootstrap: "bench1.0123456789abcdef", serviceAccount: issued.status.token };
  } finally {
    admin.close();
  }
}

/** The same GET through the platform-ca client (RestClient) in this process, as `tls`: its CPU per request, and the server's. */
async function measureClient(pid: number, kubeconfig: string, tls: ClientTls, path: string): Promise<LoadResult & { serverMicros: number }> {
  const client = createClient({ ...(await restConfigFromConnection({ kubeconfig, qps: 0, burst: 1 })), tls });
  try {
    let before = NaN;
    const loop = await timedLoop(CONCURRENCY, SECONDS, () => client.request("GET", path), () => (before = cpuSeconds(pid)));
    const used = cpuSeconds(pid) - before;
    return { ...loop, codes: { "200": loop.requests }, serverMicros: (used * 1e6) / loop.requests };
  } finally {
    client.close();
  }
}

const c = await startCluster({ apiserverArgs: ["--enable-bootstrap-token-auth"] });
const insecureDir = mkdtempSync(join(tmpdir(), "bench-requests-"));
const insecure = await startServer(insecureDir);
const peerProc = spawn(process.execPath, [join(here, "bare-https.js"), join(c.dataDir, "pki", "apiserver.crt"), join(c.dataDir, "pki", "apiserver.key"), c.caFiles.certFile], {
  stdio: ["ignore", "pipe", "inherit"],
});
try {
  const peerPort = await new Promise<string>((resolve, reject) => {
    peerProc.stdout!.once("data", (d: Buffer) => resolve(/listening on (\d+)/.exec(d.toString())?.[1] ?? ""));
    peerProc.once("exit", () => reject(new Error("the bare server exited")));
  });
  const controller = await clusterClientTls(c.dataDir, CONTROLLER_USER);
  const node = await clusterClientTls(c.dataDir, "system:node:bench", ["system:nodes"]);
  const n = c.names;
  const csrBody = csrObject({ names: n, metadata: { generateName: "bench-" }, spec: { request: CSR_PLACEHOLDER } });
  // One stored CSR for the GET rows.
  const csrPath = `/apis/${n.certificates}/v1/certificatesigningrequests`;
  await c.admin.csrs.create(await newCsrObject({ names: n, name: "bench-get", cn: "system:node:bench", o: ["system:nodes"] }));
  const eventBody = {
    apiVersion: `${n.events}/v1`,
    kind: "Event",
    metadata: { generateName: "bench.", namespace: "default" },
    eventTime: new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000Z"),
    type: "Normal",
    reason: "AutoApproved",
    action: "Approve",
    note: "Auto approving self node-agent client certificate after SubjectAccessReview.",
    regarding: { apiVersion: `${n.certificates}/v1`, kind: "CertificateSigningRequest", name: "bench-x", uid: "0b6c1f0e-8f0e-4a55-9b0c-6f1a2b3c4d5e" },
    reportingController: "platform-ca-controller-manager",
    reportingInstance: "bench",
  };
  const sarBody = {
    apiVersion: `${n.authorization}/v1`,
    kind: "SubjectAccessReview",
    spec: {
      user: "system:bootstrap:e2e001",
      groups: ["system:bootstrappers", "system:authenticated"],
      resourceAttributes: { group: n.certificates, resource: "certificatesigningrequests", subresource: "nodeclient", verb: "create" },
    },
  };
  const ssrBody = { apiVersion: `${n.authentication}/v1`, kind: "SelfSubjectReview", metadata: {} };
  const bearer = await bearerTokens(c);
  // Server-verified TLS without a client certificate: the token is the only credential.
  const caOnly = { ca: controller.ca };
  const server = c.apiserver.child.pid!;
  const allRows: Array<[string, () => Promise<LoadResult & { serverMicros: number }>]> = [
    ["bare node:https (peer): POST, JSON parsed, 3 KB answer", () => measure(peerProc.pid!, `https://127.0.0.1:${peerPort}/`, "POST", sarBody, controller)],
    ["GET CertificateSigningRequest (controllers' user)", () => measure(server, `${c.address}${csrPath}/bench-get`, "GET", undefined, controller)],
    ["the same GET through the platform-ca client", () => measureClient(server, c.adminConfig, controller, `${csrPath}/bench-get`)],
    ["POST SubjectAccessReview (not stored; controllers' user)", () => measure(server, `${c.address}/apis/${n.authorization}/v1/subjectaccessreviews`, "POST", sarBody, controller)],
    ["POST Event (durable write; controllers' user)", () => measure(server, `${c.address}/apis/${n.events}/v1/namespaces/default/events`, "POST", eventBody, controller)],
    ["POST SelfSubjectReview (not stored; a ServiceAccount's token)", () => measure(server, `${c.address}/apis/${n.authentication}/v1/selfsubjectreviews`, "POST", ssrBody, caOnly, undefined, bearer.serviceAccount)],
    ["POST TokenReview of a ServiceAccount's token (not stored; controllers' user)", () => measure(server, `${c.address}/apis/${n.authentication}/v1/tokenreviews`, "POST", { apiVersion: `${n.authentication}/v1`, kind: "TokenReview", spec: { token: bearer.serviceAccount } }, controller)],
    ["POST CertificateSigningRequest (durable, distinct CSRs checked; a node agent's bootstrap token)", () => measure(server, `${c.address}${csrPath}`, "POST", csrBody, caOnly, CSR_POOL, bearer.bootstrap)],
    ["POST CertificateSigningRequest (durable, distinct CSRs checked; a node)", () => measure(server, `${c.address}${csrPath}`, "POST", csrBody, node, CSR_POOL)],
    ["the same POST to `apiserver --insecure-local` (HTTP, no authn/RBAC)", () => measure(insecure.child.pid!, `${insecure.base}${csrPath}`, "POST", csrBody, undefined, CSR_POOL)],
  ];
  const rows = allRows.filter(([name], i) => i === 0 || !ROW_FILTER || ROW_FILTER.test(name));
  console.error(`server process ${server}`);
  // One unmeasured round first: every server has then run each request (code optimised, caches filled) before its
  // first window, as the insecure server, started for its row only, otherwise has not.
  for (const [, run] of rows) await run();
  // Each row is measured once per round, the rows in turn, so that the machine's other load falls on all of them.
  const results = rows.map(() => [] as Array<LoadResult & { serverMicros: number }>);
  for (let r = 0; r < ROUNDS; r++) for (const [i, [, run]] of rows.entries()) results[i]!.push(await run());
  const median = (i: number, f: (r: LoadResult & { serverMicros: number }) => number) => percentile(results[i]!.map(f), 50);
  const rate = (r: LoadResult) => r.requests / r.seconds;
  const serverMicros = (r: { serverMicros: number }) => r.serverMicros;
  console.log(`bench:requests — ${new Date().toISOString()}, node ${process.version}, ${CONCURRENCY} connections, ${ROUNDS} rounds of ${SECONDS} s per row (medians)`);
  console.log("| request | req/s | server CPU µs/req | ÷ peer | client CPU µs/req | statuses (all rounds) |");
  console.log("|---|---|---|---|---|---|");
  for (const [i, [name]] of rows.entries()) {
    const codes: Record<string, number> = {};
    for (const r of results[i]!) for (const [k, v] of Object.entries(r.codes)) codes[k] = (codes[k] ?? 0) + v;
    console.log(
      `| ${name} | ${median(i, rate).toFixed(0)} | ${median(i, serverMicros).toFixed(0)} | ${(median(i, serverMicros) / median(0, serverMicros)).toFixed(1)}× | ${median(i, (r) => r.clientMicros).toFixed(0)} | ${JSON.stringify(codes)} |`,
    );
  }
  // The two CSR-create rows, the last two of allRows, compared when both were measured.
  const secure = rows.indexOf(allRows[allRows.length - 2]!);
  const insecureRow = rows.indexOf(allRows[allRows.length - 1]!);
  if (secure >= 0 && insecureRow >= 0) console.log(`CSR create, secure ÷ insecure: server CPU ${(median(secure, serverMicros) / median(insecureRow, serverMicros)).toFixed(2)}×, req/s ${(median(secure, rate) / median(insecureRow, rate)).toFixed(2)}×`);
} finally {
  peerProc.kill("SIGTERM");
  await stopServer(insecure.child);
  rmSync(insecureDir, { recursive: true, force: true });
  await c.stop();
}
