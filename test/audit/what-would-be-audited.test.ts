import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MemoryAuditSink, whatWouldBeAudited } from "../../src/testing.js";
import { parseAuditPolicy } from "../../src/config/audit-policy.js";
import { isPlatformError } from "../../src/errors.js";

const POLICY = `
apiVersion: audit.platform.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    nonResourceURLs: ["/healthz*"]
  - level: RequestResponse
    resources: [{ group: certificates.platform.io, resources: ["certificatesigningrequests/approval"] }]
  - level: Request
    userGroups: ["system:nodes"]
    verbs: [create]
  - level: Metadata
`;

describe("whatWouldBeAudited (platform-ca/testing)", () => {
  it("answers level, stages, bodies and the rule for a request", () => {
    expect(whatWouldBeAudited(POLICY, { user: "admin", verb: "update", group: "certificates.platform.io", resource: "certificatesigningrequests", subresource: "approval", name: "c1" })).toEqual({
      level: "RequestResponse",
      stages: ["ResponseComplete"],
      rule: 1,
      requestBody: true,
      responseBody: true,
      omitManagedFields: false,
    });
    expect(whatWouldBeAudited(POLICY, { user: { username: "system:node:n1", groups: ["system:nodes"] }, verb: "create", group: "certificates.platform.io", resource: "certificatesigningrequests" })).toMatchObject({ level: "Request", rule: 2, requestBody: true, responseBody: false });
    expect(whatWouldBeAudited(POLICY, { user: "system:node:n1", verb: "create", group: "certificates.platform.io", resource: "certificatesigningrequests" })).toMatchObject({ level: "Metadata", rule: 3, requestBody: false });
  });

  it("gives watches a ResponseStarted stage, non-resource paths no bodies, and None no events", () => {
    expect(whatWouldBeAudited(POLICY, { user: "u", verb: "watch", group: "certificates.platform.io", resource: "certificatesigningrequests" }).stages).toEqual(["ResponseStarted", "ResponseComplete"]);
    expect(whatWouldBeAudited(POLICY, { user: "u", verb: "get", path: "/version" })).toMatchObject({ level: "Metadata", requestBody: false, responseBody: false });
    expect(whatWouldBeAudited(POLICY, { user: "u", verb: "get", path: "/healthz/ready" })).toMatchObject({ level: "None", stages: [], rule: 0 });
    const nothing = whatWouldBeAudited({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata", verbs: ["delete"] }] }, { user: "u", verb: "get", path: "/version" });
    expect(nothing).toMatchObject({ level: "None", stages: [], rule: undefined });
  });

  it("takes a loaded policy, and refuses an invalid document as the server would", () => {
    const loaded = parseAuditPolicy(POLICY, "p").policy;
    expect(whatWouldBeAudited(loaded, { user: "u", verb: "get", path: "/version" }).rule).toBe(3);
    try {
      whatWouldBeAudited({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Loud" }] }, { user: "u", verb: "get", path: "/" });
      expect.unreachable();
    } catch (err) {
      expect(isPlatformError(err, "CONFIG_INVALID")).toBe(true);
      expect((err as Error).message).toContain("`rules[0].level`");
    }
    expect(whatWouldBeAudited(POLICY.replace("audit.platform.io", "audit.k8s.io"), { user: "u", verb: "get", path: "/x" }, { groupSuffix: "k8s.io" }).level).toBe("Metadata");
  });

  it("MemoryAuditSink keeps the events of the lines it is given, and fails on demand", () => {
    const sink = new MemoryAuditSink();
    const e = { kind: "Event", apiVersion: "audit.platform.io/v1", level: "Metadata", auditID: "a", stage: "RequestReceived", requestURI: "/", verb: "get", user: { username: "u" }, requestReceivedTimestamp: "t", stageTimestamp: "t" } as const;
    sink.write(`${JSON.stringify(e)}\n${JSON.stringify({ ...e, stage: "ResponseComplete" })}\n`);
    expect(sink.byId("a").map((x) => x.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    sink.failWith = new Error("full");
    expect(() => sink.write(`${JSON.stringify(e)}\n`)).toThrow("full");
    expect(sink.events).toHaveLength(2);
  });
});

describe("the example policy of docs/audit.md", () => {
  const text = readFileSync(new URL("../../docs/audit.md", import.meta.url), "utf8");
  const policy = /```yaml\n([\s\S]*?)```/.exec(text)![1]!;
  const csrs = { group: "certificates.platform.io", resource: "certificatesigningrequests" };

  it("loads, and records the CSR flow at the levels it says", () => {
    expect(whatWouldBeAudited(policy, { user: "alice", verb: "create", ...csrs })).toMatchObject({ level: "Request", rule: 2 });
    expect(whatWouldBeAudited(policy, { user: "admin", verb: "update", ...csrs, subresource: "approval", name: "c" })).toMatchObject({ level: "RequestResponse", omitManagedFields: true });
    expect(whatWouldBeAudited(policy, { user: "ctl", verb: "update", ...csrs, subresource: "status", name: "c" }).level).toBe("RequestResponse");
    expect(whatWouldBeAudited(policy, { user: "ctl", verb: "watch", ...csrs }).stages).toEqual(["ResponseStarted", "ResponseComplete"]);
    expect(whatWouldBeAudited(policy, { user: "system:anonymous", verb: "get", path: "/readyz" }).stages).toEqual([]);
    expect(whatWouldBeAudited(policy, { user: "u", verb: "get", resource: "secrets", namespace: "a", name: "s" })).toMatchObject({ level: "Metadata", rule: 4 });
  });

  it("answers the doc's test examples as shown", () => {
    expect(whatWouldBeAudited(policy, { user: "alice", verb: "update", ...csrs, subresource: "approval", name: "csr-1" })).toMatchObject({ level: "RequestResponse", stages: ["RequestReceived", "ResponseComplete"], responseBody: true });
  });
});
