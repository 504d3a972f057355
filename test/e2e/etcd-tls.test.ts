// `platform-ca apiserver` on an etcd that requires TLS client certificates, through --etcd-cafile/--etcd-certfile/
// --etcd-keyfile: kubectl writes and reads, and etcd holds the objects (encrypted when configured) under --etcd-prefix.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openEtcdStorage } from "../../src/apiserver/storage/etcd/store.js";
import { startEtcd, type EtcdCluster } from "../fixtures/etcd.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { encryptionYaml, KEY_A } from "../apiserver/encryption/fixtures.js";
import { ensureBuilt, kubectlFor, startApiserver, type ApiserverProcess } from "./apiserver-process.js";

let etcd: EtcdCluster | undefined;
let server: ApiserverProcess | undefined;
afterAll(async () => {
  await server?.stop();
  await etcd?.stop();
});

describe("apiserver on etcd with TLS", () => {
  it("serves from etcd through the TLS flags, and etcd holds only ciphertext of encrypted resources", async () => {
    ensureBuilt();
    etcd = await startEtcd({ tls: true });
    const tls = etcd.tls!;
    const config = join(tempDir(), "encryption.yaml");
    writeFileSync(config, encryptionYaml(["secrets"], [{ aesgcm: { key1: KEY_A } }]));
    server = await startApiserver({
      extraArgs: ["--etcd-servers", etcd.endpoints.join(","), "--etcd-cafile", tls.caFile, "--etcd-certfile", tls.certFile, "--etcd-keyfile", tls.keyFile, "--etcd-prefix", "/tls-test", "--encryption-provider-config", config],
    });
    const kubectl = kubectlFor(server.address);
    kubectl(["create", "secret", "generic", "plain-text-marker", "--from-literal=token=do-not-store-me-in-clear"]);
    expect(Buffer.from(kubectl(["get", "secret", "plain-text-marker", "-o", "jsonpath={.data.token}"]), "base64").toString()).toBe("do-not-store-me-in-clear");
    const raw = await openEtcdStorage<Uint8Array>({ endpoints: etcd.endpoints, tls, prefix: "/tls-test", values: "bytes" });
    try {
      const stored = (await raw.list("/")).items.find((kv) => kv.key.includes("plain-text-marker"));
      const bytes = Buffer.from(stored!.value);
      expect(bytes.subarray(0, 18).toString()).toBe("k8s:enc:aesgcm:v1:");
      expect(bytes.includes("do-not-store-me-in-clear")).toBe(false);
      expect(bytes.includes(Buffer.from("do-not-store-me-in-clear").toString("base64"))).toBe(false);
    } finally {
      await raw.close();
    }
  }, 120_000);
});
