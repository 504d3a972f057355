// bench:admission-webhook — latency (p50/p99) of a CSR create on `platform-ca apiserver` with no admission webhook and
// with one validating webhook (HTTPS on loopback, in its own process), in the same run, rounds interleaved.
import { spawn, type ChildProcess } from "node:child_process";
import https from "node:https";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { fileURLToPath } from "node:url";
import { restConfigFromConnection } from "../../src/client/index.js";
import { startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { startAdmissionWebhook, writeWebhookManifest } from "../fixtures/admission-webhook.js";
import { csrObject } from "../fixtures/csr.js";
import { distinctCsrPems } from "./identity.js";
import { CSR_PLACEHOLDER } from "./request-load.js";
import { percentile } from "./measure.js";

/** Batches of BATCH requests alternate between the settings, so a burst of load elsewhere on the machine falls on both. */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1000);
const BATCH = Number(process.env.BENCH_BATCH ?? 20);

if (process.argv[2] === "serve") {
  // The webhook process: allows everything, says where it listens, lives until its parent closes stdin.
  const hook = await startAdmissionWebhook(() => ({ allowed: true }));
  process.stdout.write(`${JSON.stringify({ url: hook.url, caBundle: hook.caBundle })}\n`);
  process.stdin.on("end", () => {
    process.stderr.write(`the webhook answered ${hook.reviews.length} reviews\n`);
    void hook.close().then(() => process.exit(0));
  });
  process.stdin.resume();
} else {
  await main();
}

async function startWebhookProcess(): Promise<{ child: ChildProcess; url: string; caBundle: string }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "serve"], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      if (out.includes("\n")) resolve(out.split("\n")[0]!);
    });
    child.once("exit", (code) => reject(new Error(`the webhook process exited with ${code}`)));
  });
  return { child, ...(JSON.parse(line) as { url: string; caBundle: string }) };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-admission-"));
  const webhook = await startWebhookProcess();
  writeWebhookManifest(join(dir, "validating"), "bench", "Validating", [{ name: "bench.hooks.example.com", url: `${webhook.url}/validate`, caBundle: webhook.caBundle }]);
  const admission = join(dir, "admission.yaml");
  writeFileSync(admission, JSON.stringify({
    apiVersion: "apiserver.config.platform.io/v1",
    kind: "AdmissionConfiguration",
    plugins: [{ name: "ValidatingAdmissionWebhook", configuration: { apiVersion: "apiserver.config.platform.io/v1", kind: "WebhookAdmissionConfiguration", staticManifestsDir: join(dir, "validating") } }],
  }));
  const clusters = new Map<string, Cluster>();
  try {
    clusters.set("none", await startCluster());
    clusters.set("webhook", await startCluster({ apiserverArgs: ["--admission-control-config-file", admission] }));
    const n = clusters.get("none")!.names;
    // A distinct CSR in every create (made before the clock starts): each signature is checked, none answered by the memo.
    const template = JSON.stringify(csrObject({ names: n, metadata: { generateName: "bench-" }, spec: { request: CSR_PLACEHOLDER } }));
    const bodies = (await distinctCsrPems(clusters.size * (REQUESTS + 50), "admission-bench")).map((pem) => Buffer.from(template.replace(CSR_PLACEHOLDER, Buffer.from(pem).toString("base64"))));
    const latencies = new Map<string, number[]>([["none", []], ["webhook", []]]);
    const agents = new Map<string, { agent: https.Agent; url: URL }>();
    for (const [s, c] of clusters) {
      const own = await restConfigFromConnection({ kubeconfig: c.adminConfig });
      agents.set(s, { agent: new https.Agent({ keepAlive: true, maxSockets: 1, secureContext: createSecureContext({ ca: own.tls.ca!, cert: own.tls.cert!, key: own.tls.key! }) }), url: new URL(`${c.address}/apis/${n.certificates}/v1/certificatesigningrequests`) });
    }
    const once = (s: string) =>
      new Promise<number>((resolve, reject) => {
        const { agent, url } = agents.get(s)!;
        const body = bodies.pop()!;
        const started = process.hrtime.bigint();
        const req = https.request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent, headers: { "content-type": "application/json", "content-length": String(body.length), accept: "application/json" } }, (res) => {
          res.on("data", () => undefined);
          res.on("end", () => (res.statusCode === 201 ? resolve(Number(process.hrtime.bigint() - started) / 1e6) : reject(new Error(`${s}: answered ${res.statusCode}`))));
        });
        req.on("error", reject);
        req.end(body);
      });
    // Warm-up: connections, the webhook client's keep-alive connection, JIT.
    for (const s of clusters.keys()) for (let i = 0; i < 50; i++) await once(s);
    for (let round = 0; round < REQUESTS / BATCH; round++) {
      for (const s of round % 2 === 0 ? ["none", "webhook"] : ["webhook", "none"]) for (let i = 0; i < BATCH; i++) latencies.get(s)!.push(await once(s));
    }
    console.log(`bench:admission-webhook — ${new Date().toISOString()}, node ${process.version}, one request at a time, ${REQUESTS} requests per setting in alternating batches of ${BATCH}`);
    console.log("| setting | p50 ms | p99 ms |");
    console.log("|---|---|---|");
    const row = (s: string) => [percentile(latencies.get(s)!, 50), percentile(latencies.get(s)!, 99)] as const;
    const [n50, n99] = row("none");
    const [w50, w99] = row("webhook");
    console.log(`| no webhook | ${n50.toFixed(2)} | ${n99.toFixed(2)} |`);
    console.log(`| one validating webhook (HTTPS, loopback) | ${w50.toFixed(2)} | ${w99.toFixed(2)} |`);
    console.log(`| overhead | +${(w50 - n50).toFixed(2)} ms (×${(w50 / n50).toFixed(2)}) | +${(w99 - n99).toFixed(2)} ms (×${(w99 / n99).toFixed(2)}) |`);
    for (const { agent } of agents.values()) agent.destroy();
  } finally {
    for (const c of clusters.values()) await c.stop();
    webhook.child.stdin!.end();
    await new Promise((resolve) => webhook.child.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}
