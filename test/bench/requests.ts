// bench:requests — what one request of each kind the CSR flow makes costs `platform-ca apiserver` in CPU, against a
// bare node:https server (client certificates verified, a JSON body parsed, a CSR-sized JSON answer) on the same
// machine: the transport's share and the server's own. The load comes from a separate process (a bare node:https
// client), except for one row sent through the platform-ca client to show that client's own cost.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient, restConfigFromConnection } from "../../src/client/index.js";
import { startCluster } from "../controller/controllers/cluster.js";
import { newCsrObject } from "../fixtures/csr.js";
import { cpuSeconds, timedLoop } from "./measure.js";
import { measureLoad, type LoadResult, type LoadSpec } from "./request-load.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const here = fileURLToPath(new URL(".", import.meta.url));

/** Runs the load process against `url` and returns its figures with the target process's CPU per request. */
function measure(pid: number, url: string, method: string, body: unknown, tls: LoadSpec["tls"]): Promise<LoadResult & { serverMicros: number }> {
  return measureLoad(pid, { url, method, tls, concurrency: CONCURRENCY, seconds: SECONDS, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

/** The same GET through the platform-ca client (RestClient) in this process: its CPU per request, and the server's. */
async function measureClient(pid: number, kubeconfig: string, path: string): Promise<LoadResult & { serverMicros: number }> {
  const client = createClient(await restConfigFromConnection({ kubeconfig, qps: 0, burst: 1 }));
  try {
    let before = NaN;
    const loop = await timedLoop(CONCURRENCY, SECONDS, () => client.request("GET", path), () => (before = cpuSeconds(pid)));
    const used = cpuSeconds(pid) - before;
    return { ...loop, codes: { "200": loop.requests }, serverMicros: (used * 1e6) / loop.requests };
  } finally {
    client.close();
  }
}

const c = await startCluster();
const peerProc = spawn(process.execPath, [join(here, "bare-https.js"), join(c.dataDir, "pki", "apiserver.crt"), join(c.dataDir, "pki", "apiserver.key"), c.caFiles.certFile], {
  stdio: ["ignore", "pipe", "inherit"],
});
try {
  const peerPort = await new Promise<string>((resolve, reject) => {
    peerProc.stdout!.once("data", (d: Buffer) => resolve(/listening on (\d+)/.exec(d.toString())?.[1] ?? ""));
    peerProc.once("exit", () => reject(new Error("the bare server exited")));
  });
  const rest = await restConfigFromConnection({ kubeconfig: c.adminConfig });
  const tls = { ca: rest.tls.ca!, cert: rest.tls.cert!, key: rest.tls.key! };
  const n = c.names;
  const csrBody = await newCsrObject({ names: n, metadata: { generateName: "bench-" }, cn: "system:node:bench", o: ["system:nodes"] });
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
  const server = c.apiserver.child.pid!;
  const rows: Array<[string, LoadResult & { serverMicros: number }]> = [];
  const peer = await measure(peerProc.pid!, `https://127.0.0.1:${peerPort}/`, "POST", sarBody, tls);
  rows.push(["bare node:https (peer): POST, JSON parsed, 3 KB answer", peer]);
  rows.push(["GET namespace", await measure(server, `${c.address}/api/v1/namespaces/default`, "GET", undefined, tls)]);
  rows.push(["GET namespace, through the platform-ca client", await measureClient(server, c.adminConfig, "/api/v1/namespaces/default")]);
  rows.push(["POST SubjectAccessReview (not stored)", await measure(server, `${c.address}/apis/${n.authorization}/v1/subjectaccessreviews`, "POST", sarBody, tls)]);
  rows.push(["POST Event (durable write)", await measure(server, `${c.address}/apis/${n.events}/v1/namespaces/default/events`, "POST", eventBody, tls)]);
  rows.push(["POST CertificateSigningRequest (durable, CSR checked)", await measure(server, `${c.address}/apis/${n.certificates}/v1/certificatesigningrequests`, "POST", csrBody, tls)]);
  console.log(`bench:requests — ${new Date().toISOString()}, node ${process.version}, ${CONCURRENCY} connections, ${SECONDS} s per row`);
  console.log("| request | req/s | server CPU µs/req | ÷ peer | client CPU µs/req | statuses |");
  console.log("|---|---|---|---|---|---|");
  for (const [name, r] of rows) {
    console.log(`| ${name} | ${(r.requests / r.seconds).toFixed(0)} | ${r.serverMicros.toFixed(0)} | ${(r.serverMicros / peer.serverMicros).toFixed(1)}× | ${r.clientMicros.toFixed(0)} | ${JSON.stringify(r.codes)} |`);
  }
} finally {
  peerProc.kill("SIGTERM");
  await c.stop();
}
