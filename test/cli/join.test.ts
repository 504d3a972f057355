// platform-ca join's trust decision on cluster-info: the token's signature (and nothing else) vouches for the
// content, a pin must match one CA of the bundle, and each refusal says why; usage errors are one line, exit 2.
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { clusterInfoKubeconfig, detachedSignature } from "../../src/api/cluster-info.js";
import type { ConfigMap } from "../../src/api/types/core.js";
import { bootstrapConfigText, caCertHash, caCertHashes, trustedClusterInfo } from "../../src/cli/commands/join.js";
import { createTestAuthority } from "../../src/testing.js";
import { runCli } from "./fixtures.js";

const TOKEN = "abcdef.0123456789abcdef";

async function world() {
  const [a, b] = await Promise.all([createTestAuthority(), createTestAuthority()]);
  const content = clusterInfoKubeconfig("https://10.0.0.1:6443", a.caPem + b.caPem);
  const cm = (data: Record<string, string>): ConfigMap => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cluster-info", namespace: "kube-public" }, data });
  const signed = cm({ kubeconfig: content, "jws-kubeconfig-abcdef": detachedSignature(content, "abcdef", "0123456789abcdef") });
  return { a, b, content, cm, signed };
}

describe("trustedClusterInfo", () => {
  it("trusts content signed with the token whose CA bundle has a pinned certificate", async () => {
    const { a, b, content, signed } = await world();
    expect(caCertHashes(a.caPem + b.caPem)).toEqual([caCertHash(a.caPem), caCertHash(b.caPem)]);
    expect(trustedClusterInfo(signed, TOKEN, [caCertHash(b.caPem)])).toEqual({ server: "https://10.0.0.1:6443", caPem: a.caPem + b.caPem, content });
    // Without pins (--discovery-token-unsafe-skip-ca-verification) the signature alone decides.
    expect(trustedClusterInfo(signed, TOKEN, []).server).toBe("https://10.0.0.1:6443");
  });

  it("refuses another pin, another token, a forged or missing signature, and content without a cluster", async () => {
    const { content, cm, signed } = await world();
    const other = await createTestAuthority();
    expect(() => trustedClusterInfo(signed, TOKEN, [caCertHash(other.caPem)])).toThrow(/matches none of the --discovery-token-ca-cert-hash pins/);
    expect(() => trustedClusterInfo(signed, "abcdef.0123456789abcdee", [])).toThrow(/does not match the token/);
    expect(() => trustedClusterInfo(signed, "zzzzzz.0123456789abcdef", [])).toThrow(/not signed for token id "zzzzzz"/);
    const tampered = cm({ ...signed.data, kubeconfig: content.replace("10.0.0.1", "10.6.6.6") });
    expect(() => trustedClusterInfo(tampered, TOKEN, [])).toThrow(/does not match the token/);
    expect(() => trustedClusterInfo(cm({ other: "x" }), TOKEN, [])).toThrow(/has no kubeconfig key/);
    const empty = "apiVersion: v1\nkind: Config\n";
    expect(() => trustedClusterInfo(cm({ kubeconfig: empty, "jws-kubeconfig-abcdef": detachedSignature(empty, "abcdef", "0123456789abcdef") }), TOKEN, [])).toThrow(/names no server or CA/);
  });

  it("writes a bootstrap client config with the discovered cluster and the token", async () => {
    const { a } = await world();
    const doc = parseYaml(bootstrapConfigText("https://10.0.0.1:6443", a.caPem, TOKEN));
    expect(doc).toMatchObject({ "current-context": "bootstrap", users: [{ name: "bootstrap", user: { token: TOKEN } }], clusters: [{ cluster: { server: "https://10.0.0.1:6443" } }] });
    expect(Buffer.from(doc.clusters[0].cluster["certificate-authority-data"], "base64").toString()).toBe(a.caPem);
  });
});

describe("platform-ca join", () => {
  it.each([
    [["--token", "nope"], /^error: --token: expected a bootstrap token/],
    [["--token", TOKEN, "--discovery-token-ca-cert-hash", "md5:abc", "-o", "b.conf"], /^error: --discovery-token-ca-cert-hash "md5:abc": expected sha256: and 64 hex digits/],
    [["--token", TOKEN, "-o", "b.conf"], /^error: give --discovery-token-ca-cert-hash \(the CA's pin\), or --discovery-token-unsafe-skip-ca-verification/],
    [["--token", TOKEN, "--discovery-token-unsafe-skip-ca-verification"], /^error: --output: the file to write the bootstrap client config to\n$/],
  ])("refuses %j with one line and exit 2", async (args, message) => {
    const r = await runCli(["join", "https://127.0.0.1:1", ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  });
});
