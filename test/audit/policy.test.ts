import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseAuditPolicy, type AuditPolicy } from "../../src/config/audit-policy.js";
import { evaluatePolicy, type AuditAttributes } from "../../src/audit/policy.js";

const CERTS = "certificates.platform.io";

function policy(rules: unknown[], extra: Record<string, unknown> = {}): AuditPolicy {
  return parseAuditPolicy(stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules, ...extra }), "test").policy;
}

const alice = { username: "alice", groups: ["team-a", "system:authenticated"] };
const csr = (over: Partial<AuditAttributes> = {}): AuditAttributes => ({ user: alice, verb: "create", resourceRequest: true, path: "/apis/x", group: CERTS, resource: "certificatesigningrequests", ...over });
const url = (path: string, over: Partial<AuditAttributes> = {}): AuditAttributes => ({ user: alice, verb: "get", resourceRequest: false, path, ...over });

/** [rule fields, request, whether it matches] */
const CASES: [string, Record<string, unknown>, AuditAttributes, boolean][] = [
  ["empty rule matches a resource request", {}, csr(), true],
  ["empty rule matches a non-resource request", {}, url("/version"), true],
  ["users: listed", { users: ["alice"] }, csr(), true],
  ["users: not listed", { users: ["bob"] }, csr(), false],
  ["userGroups: any group", { userGroups: ["x", "team-a"] }, csr(), true],
  ["userGroups: none", { userGroups: ["team-b"] }, csr(), false],
  ["userGroups: user without groups", { userGroups: ["team-a"] }, csr({ user: { username: "u" } }), false],
  ["verbs: listed", { verbs: ["create", "update"] }, csr(), true],
  ["verbs: not listed (no wildcard, as upstream)", { verbs: ["*"] }, csr(), false],
  ["resources: group only", { resources: [{ group: CERTS }] }, csr(), true],
  ["resources: other group", { resources: [{ group: "" }] }, csr(), false],
  ["resources: core group is the empty string", { resources: [{ group: "" }] }, csr({ group: "", resource: "secrets" }), true],
  ["resources: exact", { resources: [{ group: CERTS, resources: ["certificatesigningrequests"] }] }, csr(), true],
  ["resources: exact does not match a subresource", { resources: [{ group: CERTS, resources: ["certificatesigningrequests"] }] }, csr({ subresource: "approval" }), false],
  ["resources: resource/sub", { resources: [{ group: CERTS, resources: ["certificatesigningrequests/approval"] }] }, csr({ subresource: "approval" }), true],
  ["resources: resource/sub vs other sub", { resources: [{ group: CERTS, resources: ["certificatesigningrequests/approval"] }] }, csr({ subresource: "status" }), false],
  ["resources: */status matches any resource's status", { resources: [{ group: CERTS, resources: ["*/status"] }] }, csr({ subresource: "status" }), true],
  ["resources: */status does not match the resource", { resources: [{ group: CERTS, resources: ["*/status"] }] }, csr(), false],
  ["resources: pods/* matches a subresource", { resources: [{ group: CERTS, resources: ["certificatesigningrequests/*"] }] }, csr({ subresource: "status" }), true],
  ["resources: pods/* matches the resource itself (as upstream)", { resources: [{ group: CERTS, resources: ["certificatesigningrequests/*"] }] }, csr(), true],
  ["resources: * matches subresources too", { resources: [{ group: CERTS, resources: ["*"] }] }, csr({ subresource: "status" }), true],
  ["resources: resourceNames listed", { resources: [{ group: CERTS, resources: ["*"], resourceNames: ["a"] }] }, csr({ name: "a", verb: "get" }), true],
  ["resources: resourceNames not listed", { resources: [{ group: CERTS, resources: ["*"], resourceNames: ["a"] }] }, csr({ name: "b", verb: "get" }), false],
  ["resources: resourceNames and a create (no name)", { resources: [{ group: CERTS, resources: ["*"], resourceNames: ["a"] }] }, csr(), false],
  ["resources: never a non-resource request", { resources: [{ group: "" }] }, url("/api"), false],
  ["namespaces: listed", { namespaces: ["ns1"] }, csr({ namespace: "ns1" }), true],
  ["namespaces: other", { namespaces: ["ns1"] }, csr({ namespace: "ns2" }), false],
  ['namespaces: "" is cluster-scoped', { namespaces: [""] }, csr(), true],
  ['namespaces: "" is not a namespaced request', { namespaces: [""] }, csr({ namespace: "ns1" }), false],
  ["namespaces: never a non-resource request", { namespaces: [""] }, url("/version"), false],
  ["nonResourceURLs: exact", { nonResourceURLs: ["/healthz"] }, url("/healthz"), true],
  ["nonResourceURLs: exact is not a prefix", { nonResourceURLs: ["/healthz"] }, url("/healthz/etcd"), false],
  ["nonResourceURLs: trailing * is a prefix", { nonResourceURLs: ["/healthz*"] }, url("/healthz/etcd"), true],
  ["nonResourceURLs: * alone matches all", { nonResourceURLs: ["*"] }, url("/metrics"), true],
  ["nonResourceURLs: never a resource request", { nonResourceURLs: ["*"] }, csr(), false],
  ["every field must match", { users: ["alice"], verbs: ["delete"] }, csr(), false],
];

describe("evaluatePolicy: rule fields", () => {
  for (const [name, fields, request, matches] of CASES) {
    it(name, () => {
      expect(evaluatePolicy(policy([{ level: "Metadata", ...fields }]), request).level).toBe(matches ? "Metadata" : "None");
    });
  }
});

describe("evaluatePolicy: order, levels, stages, managed fields", () => {
  it("the first matching rule wins; no match is None", () => {
    const p = policy([
      { level: "None", users: ["system:kube-proxy"] },
      { level: "RequestResponse", verbs: ["create"] },
      { level: "Metadata" },
    ]);
    expect(evaluatePolicy(p, csr()).level).toBe("RequestResponse");
    expect(evaluatePolicy(p, csr({ verb: "get" })).level).toBe("Metadata");
    expect(evaluatePolicy(p, csr({ user: { username: "system:kube-proxy" } })).level).toBe("None");
    expect(evaluatePolicy(policy([{ level: "Request", verbs: ["delete"] }]), csr()).level).toBe("None");
  });

  for (const level of ["None", "Metadata", "Request", "RequestResponse"] as const) {
    it(`level ${level} is returned as written`, () => {
      expect(evaluatePolicy(policy([{ level }]), csr()).level).toBe(level);
    });
  }

  it("omitStages is the policy's list united with the rule's", () => {
    const p = policy([{ level: "Metadata", verbs: ["create"], omitStages: ["ResponseStarted", "RequestReceived"] }, { level: "Metadata" }], { omitStages: ["RequestReceived"] });
    expect([...evaluatePolicy(p, csr()).omitStages].sort()).toEqual(["RequestReceived", "ResponseStarted"]);
    expect(evaluatePolicy(p, csr({ verb: "get" })).omitStages).toEqual(["RequestReceived"]);
  });

  it("omitManagedFields: the rule's value overrides the policy's", () => {
    const p = policy([{ level: "Request", verbs: ["create"], omitManagedFields: false }, { level: "Request" }], { omitManagedFields: true });
    expect(evaluatePolicy(p, csr()).omitManagedFields).toBe(false);
    expect(evaluatePolicy(p, csr({ verb: "get" })).omitManagedFields).toBe(true);
    expect(evaluatePolicy(policy([{ level: "Request", omitManagedFields: true }]), csr()).omitManagedFields).toBe(true);
  });
});
