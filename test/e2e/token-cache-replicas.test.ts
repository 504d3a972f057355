// The token success cache across two `platform-ca apiserver` replicas on one etcd: a ServiceAccount token remembered
// by one replica stops working there as soon as the account is deleted through the other — the replica hears the
// delete through its etcd watch — not 10 s later, as it would with upstream's cache alone.
import { mkdtempSync, readFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/client/rest-client.js";
import { restConfigFromConnection } from "../../src/client/connection-config.js";
import { startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { startEtcd, type EtcdCluster } from "../fixtures/etcd.js";
import { ensureBuilt } from "./apiserver-process.js";

let etcd: EtcdCluster | undefined;
const clusters: Cluster[] = [];
afterAll(async () => {
  for (const c of clusters) await c.stop().catch(() => undefined);
  await etcd?.stop();
});

/** POST a SelfSubjectReview to `address` with `token`; answers the status code. */
function selfReview(address: string, ca: Buffer, authentication: string, token: string): Promise<number> {
  const body = JSON.stringify({ apiVersion: `${authentication}/v1`, kind: "SelfSubjectReview", metadata: {} });
  const url = new URL(`${address}/apis/${authentication}/v1/selfsubjectreviews`);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", ca, agent: false, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("the token success cache across replicas on etcd", () => {
  it("forgets a ServiceAccount's token on one replica when the account is deleted through the other", async () => {
    ensureBuilt();
    etcd = await startEtcd({ members: 1 });
    const dir = mkdtempSync(join(tmpdir(), "platform-ca-token-cache-"));
    const args = ["--etcd-servers", etcd.members[0]!.clientUrl];
    const [a, b] = await Promise.all([startCluster({ dir, apiserverArgs: args }), startCluster({ dir, apiserverArgs: args })]);
    clusters.push(a, b);
    const admin = createClient(await restConfigFromConnection({ kubeconfig: a.adminConfig }));
    try {
      await admin.request("POST", "/api/v1/namespaces/default/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "builder" } });
      const issued = await admin.request<{ status: { token: string } }>("POST", "/api/v1/namespaces/default/serviceaccounts/builder/token", { apiVersion: `${a.names.authentication}/v1`, kind: "TokenRequest", spec: {} });
      const ca = readFileSync(a.caFiles.certFile);
      const onB = () => selfReview(b.address, ca, b.names.authentication, issued.status.token);
      // Checked and remembered by B.
      expect(await onB()).toBe(201);
      expect(await onB()).toBe(201);
      await admin.request("DELETE", "/api/v1/namespaces/default/serviceaccounts/builder");
      const deletedAt = Date.now();
      let status = await onB();
      while (status === 201 && Date.now() - deletedAt < 8_000) {
        await new Promise((r) => setTimeout(r, 20));
        status = await onB();
      }
      expect(status).toBe(401);
      // Well before the 10 s a remembered token would otherwise live: B's watch of etcd told it.
      expect(Date.now() - deletedAt).toBeLessThan(3_000);
    } finally {
      admin.close();
    }
  });
});
