// The built-in signer factory: one shared cluster CA, or one CA per signer, never both.
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createBuiltinSigners, type BuiltinSignersOptions } from "../../signers/builtins.js";
import { HOUR, node, NOW, signingRequest, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";

const cluster = await testCa({ ...SIGNERS_CA, commonName: "cluster CA" });
const serving = await testCa({ ...SIGNERS_CA, commonName: "serving CA" });
const legacy = await testCa({ ...SIGNERS_CA, commonName: "legacy CA" });

describe("built-in signer factory", () => {
  it("makes the four signers from one cluster CA, named from the group suffix", () => {
    const signers = createBuiltinSigners({ groupSuffix: "k8s.io", ca: cluster.ca, maxDurationSeconds: 24 * HOUR });
    expect(signers.map((s) => s.signerName)).toEqual([
      "kubernetes.io/kube-apiserver-client",
      "kubernetes.io/kube-apiserver-client-kubelet",
      "kubernetes.io/kubelet-serving",
      "kubernetes.io/legacy-unknown",
    ]);
    expect(signers.map((s) => s.maxDurationSeconds)).toEqual([86_400, 86_400, 86_400, 86_400]);
    expect(signers.map((s) => s.trustAnchors())).toEqual(Array(4).fill([cluster.certPem]));
  });

  it("makes only the signers given their own CA, each issuing from it", async () => {
    const signers = createBuiltinSigners({ caPerSigner: { nodeagentServing: serving.ca, legacyUnknown: legacy.ca } });
    expect(signers.map((s) => s.signerName)).toEqual(["platform.io/nodeagent-serving", "platform.io/legacy-unknown"]);
    const [servingSigner, legacySigner] = signers;
    const servingLeaf = await servingSigner!.sign(await signingRequest({ ...node("a", { dns: ["a"] }), signerName: servingSigner!.signerName, usages: ["digital signature", "server auth"] }), NOW);
    const legacyLeaf = await legacySigner!.sign(await signingRequest({ cn: "x", signerName: legacySigner!.signerName }), NOW);
    expect(new X509Certificate(servingLeaf).issuer).toBe("CN=serving CA");
    expect(new X509Certificate(legacyLeaf).issuer).toBe("CN=legacy CA");
  });

  it.each([
    ["both a cluster CA and per-signer CAs", { ca: cluster.ca, caPerSigner: { legacyUnknown: legacy.ca } }, /^expected `caPerSigner` to be unset when `ca` is set \(one cluster CA, or one CA per signer\), got \["legacyUnknown"\]$/],
    ["neither a cluster CA nor per-signer CAs", {}, /^expected `ca` or `caPerSigner` to be set, got nothing$/],
    ["a per-signer CA for a signer that does not exist", { caPerSigner: { kubelet: legacy.ca } }, /^expected `caPerSigner` to have keys among apiserverClient, nodeagentClient, nodeagentServing, legacyUnknown, got \["kubelet"\]$/],
    ["per-signer CAs that name no signer", { caPerSigner: {} }, /to give a CA to at least one signer/],
    ["a group suffix that is not a domain", { ca: cluster.ca, groupSuffix: "local" }, /expected `groupSuffix` to be a DNS name with at least two labels, got "local"/],
  ])("refuses %s", (_, options, message) => {
    expect(() => createBuiltinSigners(options as BuiltinSignersOptions)).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringMatching(message) }));
  });
});
