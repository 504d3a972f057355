// `--egress-selector-config-file` with an `etcd` selection through an HTTP CONNECT proxy (tinyproxy): the etcd
// connections of `apiserver` (--insecure-local and with identity), `storage rewrite` and `storage bump-revision` are
// tunnels through it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { encryptionYaml } from "../apiserver/encryption/fixtures.js";
import { runCli } from "../cli/fixtures.js";
import { startTinyproxy, type TestProxy } from "../fixtures/connect-proxy.js";
import { startEtcd, type EtcdCluster } from "../fixtures/etcd.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { ensureBuilt, kubectlFor, kubectlWith, startApiserver } from "./apiserver-process.js";
import { startUp } from "./up-process.js";

const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

/** An etcd, tinyproxy, and an egress file whose `etcd` selection goes through it. */
async function setUp(tls: boolean): Promise<{ etcd: EtcdCluster; proxy: TestProxy; egressFile: string; member: string }> {
  ensureBuilt();
  const etcd = await startEtcd({ tls });
  stops.push(() => etcd.stop());
  const proxy = await startTinyproxy();
  stops.push(() => proxy.close());
  const egressFile = join(tempDir(), "egress.yaml");
  writeFileSync(egressFile, stringify({ apiVersion: "apiserver.platform.io/v1beta1", kind: "EgressSelectorConfiguration", egressSelections: [{ name: "etcd", connection: { proxyProtocol: "HTTPConnect", transport: { tcp: { url: proxy.address } } } }] }));
  return { etcd, proxy, egressFile, member: etcd.endpoints[0]!.replace(/^https?:\/\//, "") };
}

describe("apiserver on etcd through the etcd egress selection", () => {
  it("--insecure-local reaches a TLS etcd only through the proxy", async () => {
    const { etcd, proxy, egressFile, member } = await setUp(true);
    const tls = etcd.tls!;
    const server = await startApiserver({
      extraArgs: ["--etcd-servers", etcd.endpoints.join(","), "--etcd-cafile", tls.caFile, "--etcd-certfile", tls.certFile, "--etcd-keyfile", tls.keyFile, "--egress-selector-config-file", egressFile],
    });
    stops.push(() => server.stop());
    const kubectl = kubectlFor(server.address);
    kubectl(["create", "secret", "generic", "through-the-proxy", "--from-literal=k=v"]);
    expect(kubectl(["get", "secrets", "-o", "jsonpath={.items[*].metadata.name}"]).split(" ")).toContain("through-the-proxy");
    expect(proxy.tunnels().length).toBeGreaterThan(0);
    expect(new Set(proxy.tunnels())).toEqual(new Set([member]));
  }, 120_000);

  it("the secure apiserver, then storage rewrite and bump-revision, reach etcd only through the proxy", async () => {
    const { etcd, proxy, egressFile, member } = await setUp(false);
    const etcdArgs = ["--etcd-servers", etcd.endpoints.join(","), "--egress-selector-config-file", egressFile];
    const server = await startUp({ command: "apiserver", args: etcdArgs });
    stops.push(() => server.stop());
    const kubectl = kubectlWith(server.adminConfig);
    kubectl(["create", "secret", "generic", "secure-through-the-proxy", "--from-literal=k=v"]);
    expect(kubectl(["get", "secret", "secure-through-the-proxy", "-o", "jsonpath={.metadata.name}"])).toBe("secure-through-the-proxy");
    await server.stop();
    const served = proxy.tunnels().length;
    expect(served).toBeGreaterThan(0);
    const config = join(tempDir(), "encryption.yaml");
    writeFileSync(config, encryptionYaml(["secrets"], ["identity"]));
    const r = await runCli(["storage", "rewrite", "--data-dir", server.dataDir, "--encryption-provider-config", config, ...etcdArgs]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^rewrote [1-9]\d* objects/);
    const rewritten = proxy.tunnels().length;
    expect(rewritten).toBeGreaterThan(served);
    const bumped = await runCli(["storage", "bump-revision", "--by", "100", ...etcdArgs]);
    expect(bumped.code, bumped.stderr).toBe(0);
    expect(bumped.stdout).toMatch(/^moved the revision from (\d+) to (\d+) and compacted at \2\n$/);
    expect(proxy.tunnels().length).toBeGreaterThan(rewritten);
    expect(new Set(proxy.tunnels())).toEqual(new Set([member]));
  }, 120_000);
});
