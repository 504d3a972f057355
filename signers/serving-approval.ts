// The opt-in policy under which the approver may approve node-agent serving CSRs: SAN patterns, CIDRs, lifetime, requester.
import { invalidOption } from "../src/errors.js";
import { MIN_EXPIRATION_SECONDS } from "../src/pki/validity.js";
import { compileCidrs, compilePatterns, type Matcher } from "./patterns.js";
import type { SigningRequest } from "./signer.js";

export interface ServingApprovalPolicy {
  /**
   * DNS names the certificate may carry: globs where `*` stays inside one label (`*.nodes.example.com`) and `**`
   * spans labels, or `/regex/`. `{node}` stands for the node name taken from the CN (`system:node:<name>`).
   */
  readonly dnsPatterns: readonly string[];
  /** IP addresses the certificate may carry: CIDRs or single addresses. */
  readonly ipCidrs: readonly string[];
  /** Longest lifetime approved; a request without spec.expirationSeconds is then left to a person. */
  readonly maxExpirationSeconds?: number;
  /** The requesting user must be the node the CN names (default true). */
  readonly usernameMustMatchCn?: boolean;
}

/** `RequesterMatchesSubject`: a node may have its own serving certificate, with any DNS or IP names. */
export const REQUESTER_MATCHES_SUBJECT: ServingApprovalPolicy = Object.freeze({
  dnsPatterns: ["**"],
  ipCidrs: ["0.0.0.0/0", "::/0"],
  usernameMustMatchCn: true,
});

const NODE_PREFIX = "system:node:";

export class ServingApprover {
  private readonly dns: readonly string[];
  private readonly ip: Matcher;
  private readonly maxSeconds: number | undefined;
  private readonly matchCn: boolean;

  /** Checks the policy once; a bad pattern or CIDR is an INVALID_OPTION naming it. */
  constructor(policy: ServingApprovalPolicy) {
    if (!Array.isArray(policy?.dnsPatterns)) throw invalidOption("servingApproval.dnsPatterns", "to be a list of patterns", policy?.dnsPatterns);
    if (!Array.isArray(policy.ipCidrs)) throw invalidOption("servingApproval.ipCidrs", "to be a list of CIDRs", policy.ipCidrs);
    for (const p of policy.dnsPatterns) {
      try {
        compilePatterns([p.replaceAll("{node}", "node")], { separator: ".", ignoreCase: true });
      } catch (err) {
        throw invalidOption("servingApproval.dnsPatterns", `to hold valid patterns (${(err as Error).message})`, p);
      }
    }
    try {
      this.ip = compileCidrs(policy.ipCidrs);
    } catch (err) {
      throw invalidOption("servingApproval.ipCidrs", `to hold CIDRs (${(err as Error).message})`, policy.ipCidrs);
    }
    const max = policy.maxExpirationSeconds;
    if (max !== undefined && (!Number.isSafeInteger(max) || max < MIN_EXPIRATION_SECONDS)) {
      throw invalidOption("servingApproval.maxExpirationSeconds", `to be a whole number ≥ ${MIN_EXPIRATION_SECONDS}`, max);
    }
    this.dns = [...policy.dnsPatterns];
    this.maxSeconds = max;
    this.matchCn = policy.usernameMustMatchCn ?? true;
  }

  /** Why `request` may not be approved under the policy, or undefined when it may. */
  problem(request: SigningRequest): string | undefined {
    const cn = request.csr.subject.commonName ?? "";
    if (this.matchCn && request.username !== cn) {
      return `the requester ${JSON.stringify(request.username ?? "")} is not the node the subject names (${JSON.stringify(cn)})`;
    }
    const node = cn.startsWith(NODE_PREFIX) ? cn.slice(NODE_PREFIX.length) : "";
    const dns = compilePatterns(this.dns.map((p) => withNode(p, node)), { separator: ".", ignoreCase: true });
    const badDns = request.csr.sans.dns.find((name) => !dns(name));
    if (badDns !== undefined) return `DNS name ${JSON.stringify(badDns)} is not allowed by the serving approval policy`;
    const badIp = request.csr.sans.ip.find((ip) => !this.ip(ip));
    if (badIp !== undefined) return `IP address ${badIp} is not in the CIDRs of the serving approval policy`;
    if (this.maxSeconds !== undefined) {
      const asked = request.expirationSeconds;
      if (asked === undefined) return `the request asks for no expirationSeconds, and the policy approves at most ${this.maxSeconds} s`;
      if (asked > this.maxSeconds) return `the request asks for ${asked} s, more than the ${this.maxSeconds} s the policy approves`;
    }
    return undefined;
  }
}

/** Puts the node name into a pattern as literal text, never as a wildcard or regular expression of its own. */
function withNode(pattern: string, node: string): string {
  if (!pattern.includes("{node}")) return pattern;
  const regex = pattern.startsWith("/") && /\/i?$/.test(pattern) && pattern.length > 1;
  const literal = regex ? node.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&") : node.replaceAll("*", "");
  return pattern.replaceAll("{node}", literal);
}
