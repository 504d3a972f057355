// The serving approval policy: which node-agent serving requests it lets the approver approve, and refused settings.
import { describe, expect, it } from "vitest";
import { REQUESTER_MATCHES_SUBJECT, ServingApprover, type ServingApprovalPolicy } from "../../signers/serving-approval.js";
import { isPlatformError } from "../../src/errors.js";
import type { ParsedCsr } from "../../src/pki/types.js";
import type { SigningRequest } from "../../signers/signer.js";

/** A request as the approver sees it; only the subject, SANs, requester and lifetime matter to the policy. */
function request(o: { cn?: string; dns?: string[]; ip?: string[]; username?: string; expirationSeconds?: number } = {}): SigningRequest {
  const cn = o.cn ?? "system:node:web-1";
  const csr = {
    subject: { commonName: cn, organizations: ["system:nodes"], organizationalUnits: [], rdns: [], text: `CN=${cn}`, der: new Uint8Array() },
    sans: { dns: o.dns ?? ["web-1.nodes.example.com"], ip: o.ip ?? ["10.0.0.5"], email: [], uri: [], other: [] },
  } as unknown as ParsedCsr;
  return {
    signerName: "platform.io/nodeagent-serving",
    csr,
    usages: ["digital signature", "server auth"],
    username: o.username ?? cn,
    ...(o.expirationSeconds !== undefined && { expirationSeconds: o.expirationSeconds }),
  };
}

const policy: ServingApprovalPolicy = { dnsPatterns: ["{node}.nodes.example.com", "/^{node}-[0-9]+\\.pods\\.example\\.com$/"], ipCidrs: ["10.0.0.0/8", "fd00::/8"], maxExpirationSeconds: 86_400 };

describe("ServingApprover", () => {
  it.each([
    ["the node's own names and addresses", {}, undefined],
    ["a regular-expression name with the node in it", { dns: ["web-1-3.pods.example.com"] }, undefined],
    ["an IPv6 address in range", { ip: ["fd00::1"] }, undefined],
    ["names of another node", { dns: ["web-2.nodes.example.com"] }, /DNS name "web-2.nodes.example.com" is not allowed/],
    ["a wildcard name", { dns: ["*.nodes.example.com"] }, /DNS name "\*.nodes.example.com"/],
    ["an address out of range", { ip: ["192.168.0.1"] }, /IP address 192.168.0.1 is not in the CIDRs/],
    ["a requester other than the node", { username: "system:node:web-2" }, /requester "system:node:web-2" is not the node/],
    ["a lifetime above the maximum", { expirationSeconds: 86_401 }, /asks for 86401 s, more than the 86400 s/],
  ])("judges %s", (_name, o, problem) => {
    const asked = request({ expirationSeconds: 3600, ...o });
    const got = new ServingApprover(policy).problem(asked);
    if (problem === undefined) expect(got).toBeUndefined();
    else expect(got).toMatch(problem);
  });

  it("leaves a request without a lifetime to a person when the policy has a maximum", () => {
    expect(new ServingApprover(policy).problem(request())).toMatch(/asks for no expirationSeconds/);
  });

  it("takes the node name as literal text, never as a pattern", () => {
    const approver = new ServingApprover({ dnsPatterns: ["{node}.example.com", "/{node}\\.re\\.example\\.com/"], ipCidrs: [], usernameMustMatchCn: false });
    expect(approver.problem(request({ cn: "system:node:*", dns: ["anything.example.com"], ip: [] }))).toMatch(/not allowed/);
    expect(approver.problem(request({ cn: "system:node:a.b", dns: ["axb.re.example.com"], ip: [] }))).toMatch(/not allowed/);
    expect(approver.problem(request({ cn: "system:node:a.b", dns: ["a.b.re.example.com"], ip: [] }))).toBeUndefined();
  });

  it("lets RequesterMatchesSubject approve any names for the node itself only", () => {
    const approver = new ServingApprover(REQUESTER_MATCHES_SUBJECT);
    expect(approver.problem(request({ dns: ["x.y.z"], ip: ["203.0.113.9", "2001:db8::1"] }))).toBeUndefined();
    expect(approver.problem(request({ username: "mallory" }))).toMatch(/not the node/);
  });

  it.each([
    ["a bad CIDR", { dnsPatterns: [], ipCidrs: ["10.0.0.0/33"] }, /servingApproval.ipCidrs/],
    ["a bad regular expression", { dnsPatterns: ["/([/"], ipCidrs: [] }, /servingApproval.dnsPatterns/],
    ["a maximum below 600 s", { dnsPatterns: [], ipCidrs: [], maxExpirationSeconds: 60 }, /servingApproval.maxExpirationSeconds. to be a whole number ≥ 600, got 60/],
  ])("refuses %s once, with the option message", (_name, p, message) => {
    let error: unknown;
    try {
      new ServingApprover(p as ServingApprovalPolicy);
    } catch (err) {
      error = err;
    }
    expect(isPlatformError(error, "INVALID_OPTION")).toBe(true);
    expect((error as Error).message).toMatch(message);
  });
});
