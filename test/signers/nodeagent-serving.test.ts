// Rules of the node-agent serving signer: a node identity naming itself by DNS or IP, serving usages only.
import { describe, expect, it } from "vitest";
import { createNodeagentServingSigner } from "../../signers/nodeagent-serving.js";
import { expectVerdict, node, NOW, signingRequest, type Verdict, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { run, tryRun } from "../fixtures/process.js";

const signer = createNodeagentServingSigner({ ca: (await testCa(SIGNERS_CA)).ca });
const SERVING = ["digital signature", "server auth"];

const cases: Verdict[] = [
  ["accepts a node with a DNS name", { ...node("a", { dns: ["a.nodes.example"] }), usages: SERVING }, true],
  ["accepts a node with only IP addresses", { ...node("a", { ip: ["10.0.0.1", "fd00::1"] }), usages: SERVING }, true],
  ["accepts key encipherment as an optional extra usage", { ...node("a", { dns: ["a"] }), usages: ["key encipherment", ...SERVING] }, true],
  ["refuses a node without DNS or IP names", { ...node(), usages: SERVING }, /at least one DNS or IP subject alternative name/],
  ["refuses an email address", { ...node("a", { dns: ["a"], email: ["a@example.com"] }), usages: SERVING }, /does not allow email subject alternative names/],
  ["refuses a URI", { ...node("a", { ip: ["10.0.0.1"], uri: ["https://a.example"] }), usages: SERVING }, /does not allow URI subject alternative names/],
  ["refuses an organisation other than system:nodes", { ...node("a", { o: ["dev"], dns: ["a"] }), usages: SERVING }, /organization exactly \["system:nodes"\]/],
  ["refuses a common name outside system:node:", { cn: "a.example", o: ["system:nodes"], dns: ["a"], usages: SERVING }, /common name "system:node:<node name>"/],
  ["refuses the client auth usage", { ...node("a", { dns: ["a"] }), usages: [...SERVING, "client auth"] },
    /^usage "client auth" is not allowed for signer platform\.io\/nodeagent-serving; allowed: digital signature, server auth, key encipherment$/],
  ["refuses a request without server auth", { ...node("a", { dns: ["a"] }), usages: ["digital signature"] }, /usage "server auth" is required/],
  ["refuses a request without digital signature", { ...node("a", { dns: ["a"] }), usages: ["key encipherment", "server auth"] }, /usage "digital signature" is required/],
];

describe("nodeagent-serving signer", () => {
  it.each(cases)("%s", (_, request, expected) => expectVerdict(signer, request, expected));
});

describe("nodeagent-serving certificates", () => {
  it("pass python cryptography's server verifier for the node's DNS name", async () => {
    const { ca, certPem } = await testCa(SIGNERS_CA);
    const servingSigner = createNodeagentServingSigner({ ca });
    const chain = await servingSigner.sign(await signingRequest({ ...node("a", { dns: ["a.nodes.example"] }), signerName: servingSigner.signerName, usages: SERVING }), NOW);
    const script = `
import sys, datetime
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store
root, leaf = sys.stdin.read().split("\\n==\\n")
builder = PolicyBuilder().store(Store([x509.load_pem_x509_certificate(root.encode())])).time(datetime.datetime.fromtimestamp(${NOW.getTime() / 1000}, datetime.timezone.utc))
chain = builder.build_server_verifier(x509.DNSName(sys.argv[1])).verify(x509.load_pem_x509_certificate(leaf.encode()), [])
print(len(chain))`;
    expect(run("python3", ["-c", script, "a.nodes.example"], `${certPem}\n==\n${chain}`).trim()).toBe("2");
    expect(tryRun("python3", ["-c", script, "b.nodes.example"], `${certPem}\n==\n${chain}`).out).toMatch(/leaf certificate has no matching subjectAltName/);
  });
});
