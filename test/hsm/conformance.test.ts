// The four built-in signers and a policy signer run the shared conformance suite with their CA key in SoftHSM2.
import { afterAll, describe, expect, it } from "vitest";
import { createApiserverClientSigner } from "../../signers/apiserver-client.js";
import { createNodeagentClientSigner } from "../../signers/apiserver-client-nodeagent.js";
import type { CaInput } from "../../signers/ca-backing.js";
import { createLegacyUnknownSigner } from "../../signers/legacy-unknown.js";
import { createNodeagentServingSigner } from "../../signers/nodeagent-serving.js";
import { parsePolicy } from "../../signers/policy-schema.js";
import { createPolicySigner } from "../../signers/policy-signer.js";
import type { Signer } from "../../signers/signer.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import { describeSignerConformance, type ConformanceEnv } from "../conformance/signer-conformance.js";
import { node } from "../signers/fixtures.js";
import { importIntoToken } from "./import-key.js";
import { privateKeyFiles, softhsmToken } from "./softhsm.js";

const token = softhsmToken("conformance");
const inToken = new Map<string, Promise<CaKeyPair>>();
const signersSeen: Signer[] = [];

/** The suite's CA with its key moved into the token; CA sources without a CA (the not-ready case) pass through. */
function tokenCa(ca: CaInput): CaInput | Promise<CaKeyPair> {
  if (!("certPem" in ca) || ca.privateKey === undefined) return ca;
  let imported = inToken.get(ca.certPem);
  if (imported === undefined) {
    imported = importIntoToken(token.uri(`ca-${inToken.size}`), ca as CaKeyPair & { privateKey: NonNullable<CaKeyPair["privateKey"]> });
    inToken.set(ca.certPem, imported);
  }
  return imported;
}

function inTokenSigner(make: (env: ConformanceEnv) => Signer): (env: ConformanceEnv) => Promise<Signer> {
  return async (env) => {
    const signer = make({ ...env, ca: await tokenCa(env.ca) });
    signersSeen.push(signer);
    return signer;
  };
}

const CLIENT = ["digital signature", "key encipherment", "client auth"];
const SERVING = ["digital signature", "key encipherment", "server auth"];

describeSignerConformance("apiserver-client (CA key in SoftHSM2)", inTokenSigner(createApiserverClientSigner), {
  caKeyType: "p384",
  valid: [{ name: "a user client certificate for one day", request: { cn: "alice", o: ["dev"], usages: CLIENT, expirationSeconds: 86_400 } }],
  invalid: [{ name: "a system:masters certificate", request: { cn: "root", o: ["system:masters"], usages: CLIENT } }],
});

describeSignerConformance("apiserver-client-nodeagent (CA key in SoftHSM2)", inTokenSigner(createNodeagentClientSigner), {
  caKeyType: "p256",
  valid: [{ name: "a node client certificate for 10 minutes", request: { ...node("a"), usages: ["digital signature", "client auth"], expirationSeconds: 600 } }],
  invalid: [{ name: "a user outside system:nodes", request: { cn: "alice", usages: CLIENT } }],
});

describeSignerConformance("nodeagent-serving (CA key in SoftHSM2)", inTokenSigner(createNodeagentServingSigner), {
  caKeyType: "rsa2048",
  valid: [{ name: "a node serving certificate with DNS and IP names", request: { ...node("a", { dns: ["a.nodes.example"], ip: ["10.0.0.7"] }), usages: SERVING, expirationSeconds: 7 * 86_400 } }],
  invalid: [{ name: "a serving certificate without names", request: { ...node("a"), usages: SERVING } }],
});

describeSignerConformance("legacy-unknown (CA key in SoftHSM2)", inTokenSigner(createLegacyUnknownSigner), {
  caKeyType: "p256",
  valid: [{ name: "a code-signing certificate for 2 hours", request: { cn: "builder", usages: ["digital signature", "code signing"], expirationSeconds: 7200 } }],
  invalid: [{ name: "an unknown usage", request: { cn: "x", usages: ["digital signature", "teleport"] } }],
});

const services = parsePolicy({
  signerName: "example.com/hsm-services",
  subject: { permitted: { CN: ["*.svc.example.com"] }, required: ["CN"] },
  subjectAltNames: { dns: { permitted: ["*.svc.example.com"] }, required: ["dns"] },
  usages: { required: ["digital signature", "server auth"], permitted: ["key encipherment"] },
  lifetime: { default: "24h", maximum: "30d" },
});

describeSignerConformance("policy signer (CA key in SoftHSM2)", inTokenSigner((env) => createPolicySigner(services, env)), {
  caKeyType: "rsa2048",
  valid: [{ name: "a service certificate with the default lifetime", request: { cn: "api.svc.example.com", dns: ["api.svc.example.com"], usages: SERVING }, lifetimeSeconds: 24 * 3600 }],
  invalid: [{ name: "a subject outside the permitted names", request: { cn: "api.example.org", dns: ["api.svc.example.com"], usages: SERVING } }],
});

describe("the conformance runs above", () => {
  afterAll(async () => {
    // Every CA the signers used signs through the token and holds no key in the process; no key file was written.
    const cas = await Promise.all(inToken.values());
    expect(cas.length).toBeGreaterThanOrEqual(4);
    for (const ca of cas) expect([ca.privateKey, typeof ca.keySigner?.sign]).toEqual([undefined, "function"]);
    expect(privateKeyFiles(token.dir)).toEqual([]);
  });
  it("made signers", () => expect(signersSeen.length).toBeGreaterThan(0));
});
