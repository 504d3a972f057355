// Runs the storage contract against real etcd (a fresh single member per store: etcd's revision and compaction are
// cluster-wide, and the contract counts revisions from 1), plus what only etcd must do: TLS, reconnects, replicas.
import { afterAll } from "vitest";
import { openEtcdStorage } from "../../../src/apiserver/storage/etcd/store.js";
import { startEtcd, type EtcdCluster } from "../../fixtures/etcd.js";
import { storageContract } from "./contract.js";

const clusters: EtcdCluster[] = [];
afterAll(async () => {
  await Promise.all(clusters.map((c) => c.stop()));
});

storageContract("etcd", async (options) => {
  const cluster = await startEtcd();
  clusters.push(cluster);
  return openEtcdStorage({ endpoints: cluster.endpoints, ...options });
});
