// Rules of the node-agent client signer: a node identity, no SANs, usages exactly client ones.
import { describe, it } from "vitest";
import { createNodeagentClientSigner } from "../../signers/apiserver-client-nodeagent.js";
import { expectVerdict, node, type Verdict, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";

const signer = createNodeagentClientSigner({ ca: (await testCa(SIGNERS_CA)).ca });
const CLIENT = ["digital signature", "client auth"];

const cases: Verdict[] = [
  ["accepts a node identity with digital signature and client auth", { ...node(), usages: CLIENT }, true],
  ["accepts key encipherment as an optional extra usage", { ...node(), usages: ["key encipherment", "digital signature", "client auth"] }, true],
  ["accepts the usages in any order", { ...node(), usages: ["client auth", "digital signature"] }, true],
  ["refuses an organisation besides system:nodes", { ...node("a", { o: ["system:nodes", "dev"] }), usages: CLIENT }, /organization exactly \["system:nodes"\], got \["system:nodes","dev"\]/],
  ["refuses a request without organisation", { cn: "system:node:a", usages: CLIENT }, /organization exactly/],
  ["refuses a common name outside system:node:", { cn: "alice", o: ["system:nodes"], usages: CLIENT }, /common name "system:node:<node name>", got "alice"/],
  ["refuses an empty node name", { cn: "system:node:", o: ["system:nodes"], usages: CLIENT }, /common name "system:node:<node name>"/],
  ["refuses a request without common name", { o: ["system:nodes"], usages: CLIENT }, /got none/],
  ["refuses a DNS name", { ...node("a", { dns: ["a.example"] }), usages: CLIENT }, /does not allow DNS subject alternative names, got a\.example/],
  ["refuses an IP address", { ...node("a", { ip: ["10.0.0.1"] }), usages: CLIENT }, /does not allow IP subject alternative names/],
  ["refuses an email address", { ...node("a", { email: ["a@example.com"] }), usages: CLIENT }, /does not allow email subject alternative names/],
  ["refuses a URI", { ...node("a", { uri: ["spiffe://example/a"] }), usages: CLIENT }, /does not allow URI subject alternative names/],
  ["refuses the server auth usage", { ...node(), usages: [...CLIENT, "server auth"] },
    /^usage "server auth" is not allowed for signer platform\.io\/apiserver-client-nodeagent; allowed: digital signature, client auth, key encipherment$/],
  ["refuses a request without digital signature", { ...node(), usages: ["key encipherment", "client auth"] }, /usage "digital signature" is required/],
  ["refuses a request without client auth", { ...node(), usages: ["digital signature"] }, /usage "client auth" is required/],
];

describe("apiserver-client-nodeagent signer", () => {
  it.each(cases)("%s", (_, request, expected) => expectVerdict(signer, request, expected));
});
