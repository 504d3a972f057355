// `platform-ca apiserver --egress-selector-config-file` on etcd: with an `etcd` selection through an HTTP CONNECT proxy
// (tinyproxy), the server's etcd connections are tunnels through it, TLS to the member inside them.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { startTinyproxy, type TestProxy } from "../fixtures/connect-proxy.js";
import { startEtcd, type EtcdCluster } from "../fixtures/etcd.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { ensureBuilt, kubectlFor, startApiserver, type ApiserverProcess } from "./apiserver-process.js";

let etcd: EtcdCluster | undefined;
let proxy: TestProxy | undefined;
let server: ApiserverProcess | undefined;
afterAll(async () => {
  await server?.stop();
  await proxy?.close();
  await etcd?.stop();
});

describe("apiserver on etcd through the etcd egress selection", () => {
  it("reaches a TLS etcd only through the proxy", async () => {
    ensureBuilt();
    etcd = await startEtcd({ tls: true });
    proxy = await startTinyproxy();
    const tls = etcd.tls!;
    const egress = join(tempDir(), "egress.yaml");
    writeFileSync(egress, stringify({ apiVersion: "apiserver.platform.io/v1beta1", kind: "EgressSelectorConfiguration", egressSelections: [{ name: "etcd", connection: { proxyProtocol: "HTTPConnect", transport: { tcp: { url: proxy.address } } } }] }));
    server = await startApiserver({
      extraArgs: ["--etcd-servers", etcd.endpoints.join(","), "--etcd-cafile", tls.caFile, "--etcd-certfile", tls.certFile, "--etcd-keyfile", tls.keyFile, "--egress-selector-config-file", egress],
    });
    const kubectl = kubectlFor(server.address);
    kubectl(["create", "secret", "generic", "through-the-proxy", "--from-literal=k=v"]);
    expect(kubectl(["get", "secrets", "-o", "jsonpath={.items[*].metadata.name}"]).split(" ")).toContain("through-the-proxy");
    const member = etcd.endpoints[0]!.replace("https://", "");
    expect(proxy.tunnels().length).toBeGreaterThan(0);
    expect(new Set(proxy.tunnels())).toEqual(new Set([member]));
  }, 120_000);
});
