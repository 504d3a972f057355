// The four built-in signers run the conformance suite, each from a CA of a different key type.
import { createApiserverClientSigner } from "../../signers/apiserver-client.js";
import { createNodeagentClientSigner } from "../../signers/apiserver-client-nodeagent.js";
import { createLegacyUnknownSigner } from "../../signers/legacy-unknown.js";
import { createNodeagentServingSigner } from "../../signers/nodeagent-serving.js";
import { node } from "../signers/fixtures.js";
import { describeSignerConformance } from "./signer-conformance.js";

const CLIENT = ["digital signature", "key encipherment", "client auth"];
const SERVING = ["digital signature", "key encipherment", "server auth"];

describeSignerConformance("apiserver-client", createApiserverClientSigner, {
  caKeyType: "p384",
  valid: [
    { name: "a user client certificate for one day", request: { cn: "alice", o: ["dev"], usages: CLIENT, expirationSeconds: 86_400 } },
    { name: "an RSA client key with SANs and no expirationSeconds", request: { cn: "bot", key: "rsa2048", dns: ["bot.example"], usages: ["digital signature", "client auth"] } },
  ],
  invalid: [
    { name: "a system:masters certificate", request: { cn: "root", o: ["system:masters"], usages: CLIENT } },
    { name: "a serving usage", request: { cn: "alice", usages: SERVING } },
  ],
});

describeSignerConformance("apiserver-client-nodeagent", createNodeagentClientSigner, {
  caKeyType: "p256",
  valid: [
    { name: "a node client certificate for 10 minutes", request: { ...node("a"), usages: ["digital signature", "client auth"], expirationSeconds: 600 } },
    { name: "a node client certificate with key encipherment for 30 days", request: { ...node("b", { key: "ed25519" }), usages: CLIENT, expirationSeconds: 30 * 86_400 } },
  ],
  invalid: [
    { name: "a node client certificate with a DNS name", request: { ...node("a", { dns: ["a"] }), usages: CLIENT } },
    { name: "a user outside system:nodes", request: { cn: "alice", usages: CLIENT } },
  ],
});

describeSignerConformance("nodeagent-serving", createNodeagentServingSigner, {
  caKeyType: "rsa2048",
  valid: [
    { name: "a node serving certificate with DNS and IP names", request: { ...node("a", { dns: ["a.nodes.example"], ip: ["10.0.0.7", "fd00::7"] }), usages: SERVING, expirationSeconds: 7 * 86_400 } },
  ],
  invalid: [
    { name: "a serving certificate without names", request: { ...node("a"), usages: SERVING } },
    { name: "a serving certificate with client auth", request: { ...node("a", { dns: ["a"] }), usages: [...SERVING, "client auth"] } },
  ],
});

describeSignerConformance("legacy-unknown", createLegacyUnknownSigner, {
  caKeyType: "ed25519",
  valid: [
    { name: "a code-signing certificate for 2 hours", request: { cn: "builder", usages: ["digital signature", "code signing"], expirationSeconds: 7200 } },
  ],
  invalid: [
    { name: "an unknown usage", request: { cn: "x", usages: ["digital signature", "teleport"] } },
    { name: "a lifetime below 10 minutes", request: { cn: "x", usages: ["digital signature"], expirationSeconds: 300 } },
  ],
});
