// Rules of the API-server client signer: client usages only, client auth required, never system:masters.
import { describe, expect, it } from "vitest";
import { createApiserverClientSigner } from "../../signers/apiserver-client.js";
import { expectVerdict, type Verdict, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";

const { ca } = await testCa(SIGNERS_CA);
const signer = createApiserverClientSigner({ ca });

const cases: Verdict[] = [
  ["accepts a typical client certificate request", { cn: "alice", o: ["dev"] }, true],
  ["accepts client auth as the only usage", { cn: "alice", usages: ["client auth"] }, true],
  ["accepts any subject with DNS, IP, email and URI names", { cn: "bot", ou: ["ops"], dns: ["bot.example"], ip: ["10.1.2.3"], email: ["bot@example.com"], uri: ["spiffe://example/bot"] }, true],
  ["refuses the organisation system:masters", { cn: "mallory", o: ["system:masters"] }, /does not issue certificates for organization "system:masters"/],
  ["refuses system:masters anywhere among the organisations", { cn: "mallory", o: ["dev", "system:masters"] }, /system:masters/],
  ["refuses the server auth usage and lists the allowed ones", { cn: "alice", usages: ["digital signature", "server auth", "client auth"] },
    /^usage "server auth" is not allowed for signer platform\.io\/apiserver-client; allowed: digital signature, key encipherment, client auth$/],
  ["refuses a request without client auth", { cn: "alice", usages: ["digital signature", "key encipherment"] }, /usage "client auth" is required by signer platform\.io\/apiserver-client/],
];

describe("apiserver-client signer", () => {
  it.each(cases)("%s", (_, request, expected) => expectVerdict(signer, request, expected));

  it.each([
    ["platform.io", "platform.io/apiserver-client"],
    ["k8s.io", "kubernetes.io/kube-apiserver-client"],
    ["example.org", "example.org/apiserver-client"],
  ])("takes its name from the group suffix %s", (groupSuffix, name) => {
    expect(createApiserverClientSigner({ ca, groupSuffix }).signerName).toBe(name);
  });
});
