// bench:authorization — request latency (p50/p99) of `platform-ca apiserver` with one cached webhook authorizer before
// RBAC against RBAC alone, in the same run: two servers, rounds interleaved so the shared machine's load falls on both.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BOOTSTRAP_TOKEN, startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { reviewAnswer, startTestWebhookServer } from "../../src/testing.js";
import { envNumber, percentile } from "./measure.js";

const ROUNDS = envNumber("BENCH_ROUNDS", 10);
const REQUESTS = envNumber("BENCH_REQUESTS", 500);
const SETTINGS = ["RBAC only", "webhook + RBAC"] as const;

const dir = mkdtempSync(join(tmpdir(), "platform-ca-bench-authz-"));
// The policy webhook allows everything: after its first answer the cache answers (authorizedTTL 5m).
const hook = await startTestWebhookServer({ decide: (review) => reviewAnswer(review, "status", { allowed: true, reason: "bench" }) });
writeFileSync(join(dir, "webhook.kubeconfig"), hook.clientConfig());
const config = join(dir, "authorization.yaml");
writeFileSync(config, `apiVersion: apiserver.config.platform.io/v1
kind: AuthorizationConfiguration
authorizers:
  - type: Webhook
    name: policy
    webhook: {timeout: 3s, authorizedTTL: 5m, unauthorizedTTL: 30s, subjectAccessReviewVersion: v1, failurePolicy: Deny, connectionInfo: {type: KubeConfigFile, kubeConfigFile: ${join(dir, "webhook.kubeconfig")}}}
  - type: RBAC
    name: rbac
`);

/** One keep-alive connection, requests one after another: the latency of each, in ms. */
async function latencies(c: Cluster, n: number): Promise<number[]> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: readFileSync(c.caFiles.certFile, "latin1") });
  const url = new URL(`${c.address}/version`);
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const start = process.hrtime.bigint();
      await new Promise<void>((resolve, reject) => {
        // The bootstrap token's user is no system:masters member, so every request goes through the chain.
        https.get({ host: url.hostname, port: url.port, path: url.pathname, agent, headers: { authorization: `Bearer ${BOOTSTRAP_TOKEN}` } }, (res) => {
          if (res.statusCode !== 200) reject(new Error(`GET /version answered ${res.statusCode}`));
          res.resume().on("end", resolve).on("error", reject);
        }).on("error", reject);
      });
      out.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  } finally {
    agent.destroy();
  }
  return out;
}

const clusters = new Map<string, Cluster>();
try {
  clusters.set("RBAC only", await startCluster());
  clusters.set("webhook + RBAC", await startCluster({ apiserverArgs: ["--authorization-config", config] }));
  for (const c of clusters.values()) await latencies(c, 200); // warm-up: connections, JIT, the webhook's cache
  const all = new Map<string, number[]>(SETTINGS.map((s) => [s, []]));
  const p50s = new Map<string, number[]>(SETTINGS.map((s) => [s, []]));
  const p99s = new Map<string, number[]>(SETTINGS.map((s) => [s, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of SETTINGS.map((_, i) => SETTINGS[(i + round) % SETTINGS.length]!)) {
      const l = await latencies(clusters.get(s)!, REQUESTS);
      all.get(s)!.push(...l);
      p50s.get(s)!.push(percentile(l, 50));
      p99s.get(s)!.push(percentile(l, 99));
    }
  }
  console.log(`bench:authorization — ${new Date().toISOString()}, node ${process.version}, GET /version as a bearer-token user, 1 connection, ${ROUNDS} rounds × ${REQUESTS} requests per setting`);
  console.log("| setting | p50 ms (all) | p99 ms (all) | median of round p50 | median of round p99 |");
  console.log("|---|---|---|---|---|");
  for (const s of SETTINGS) {
    console.log(`| ${s} | ${percentile(all.get(s)!, 50).toFixed(3)} | ${percentile(all.get(s)!, 99).toFixed(3)} | ${percentile(p50s.get(s)!, 50).toFixed(3)} | ${percentile(p99s.get(s)!, 50).toFixed(3)} |`);
  }
  const ratio = (p: number) => (percentile(all.get("webhook + RBAC")!, p) / percentile(all.get("RBAC only")!, p)).toFixed(2);
  console.log(`webhook + RBAC / RBAC only: p50 ×${ratio(50)}, p99 ×${ratio(99)}; webhook calls: ${hook.requests.length} (the rest answered by the cache)`);
} finally {
  for (const c of clusters.values()) await c.stop();
  await hook.close();
  rmSync(dir, { recursive: true, force: true });
}
