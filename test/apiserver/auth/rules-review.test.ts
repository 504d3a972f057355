// SelfSubjectRulesReview: RBAC's rules for the caller in a namespace, split as upstream splits them; JSON and protobuf bodies.
import { describe, expect, it } from "vitest";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { createSelfSubjectRulesReviewHandler, pipelineRuleResolver } from "../../../src/apiserver/auth/rules-review.js";
import { decodeProtobufObject } from "../../../src/apiserver/http/protobuf.js";
import { clusterRole, clusterRoleBinding, names, role, roleBinding, rule, StaticLister, user, userSubject } from "./fixtures.js";
import { bytes, envelope, message, objectMeta } from "../http/protobuf-encoder.js";

const AUTHZ = `${names.authorization}/v1`;
const review = (namespace?: string) => ({ apiVersion: AUTHZ, kind: "SelfSubjectRulesReview", metadata: {}, spec: namespace === undefined ? {} : { namespace } });
const ctx = (username: string) => ({ now: new Date(0), names, user: user({ username }) });

function rbac(): RbacAuthorizer {
  const lister = new StaticLister({
    clusterRoles: [
      clusterRole("csr-reader", [rule({ apiGroups: [names.certificates], resources: ["certificatesigningrequests"], verbs: ["get", "list"] })]),
      clusterRole("metrics", [rule({ nonResourceURLs: ["/metrics"], verbs: ["get"] })]),
    ],
    roles: [role("team", "one-secret", [rule({ apiGroups: [""], resources: ["secrets"], resourceNames: ["app"], verbs: ["get"] })])],
    clusterRoleBindings: [
      clusterRoleBinding("readers", "csr-reader", [userSubject("dana")]),
      clusterRoleBinding("metrics", "metrics", [userSubject("dana")]),
      clusterRoleBinding("broken", "nosuch", [userSubject("dana")]),
    ],
    roleBindings: [roleBinding("team", "secret", { kind: "Role", name: "one-secret" }, [userSubject("dana")])],
  });
  return new RbacAuthorizer({ lister, names });
}

describe("SelfSubjectRulesReview", () => {
  it("lists the caller's cluster-wide and namespace rules, resource and non-resource apart, with the evaluation errors", async () => {
    const out = await createSelfSubjectRulesReviewHandler(rbac())(review("team"), ctx("dana"));
    expect(out.status).toEqual({
      resourceRules: [
        { verbs: ["get", "list"], apiGroups: [names.certificates], resources: ["certificatesigningrequests"] },
        { verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["app"] },
      ],
      nonResourceRules: [{ verbs: ["get"], nonResourceURLs: ["/metrics"] }],
      incomplete: false,
      evaluationError: expect.stringContaining('clusterroles.rbac.authorization.platform.io "nosuch" not found'),
    });
  });

  it("leaves out another namespace's rules and another user's", async () => {
    const other = await createSelfSubjectRulesReviewHandler(rbac())(review("elsewhere"), ctx("dana"));
    expect((other.status as { resourceRules: unknown[] }).resourceRules).toHaveLength(1);
    const stranger = await createSelfSubjectRulesReviewHandler(rbac())(review("team"), ctx("erin"));
    expect(stranger.status).toEqual({ resourceRules: [], nonResourceRules: [], incomplete: false });
  });

  it("answers 400 without a namespace, as upstream", async () => {
    await expect(createSelfSubjectRulesReviewHandler(rbac())(review(), ctx("dana"))).rejects.toMatchObject({ code: "BAD_REQUEST", message: "no namespace on request" });
  });

  it("lists everything for a server whose pipeline allows everything, and nothing (incomplete) for one that does not", async () => {
    const open = await createSelfSubjectRulesReviewHandler(pipelineRuleResolver({ authorize: async () => ({ allowed: true }) }))(review("default"), ctx("x"));
    expect(open.status).toEqual({
      resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
      nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
      incomplete: false,
    });
    const closed = await createSelfSubjectRulesReviewHandler(pipelineRuleResolver({ authorize: async () => ({ allowed: false }) }))(review("default"), ctx("x"));
    expect(closed.status).toEqual({ resourceRules: [], nonResourceRules: [], incomplete: true });
  });

  it("decodes the protobuf body kubectl auth can-i --list sends", () => {
    const body = envelope("authorization.k8s.io/v1", "SelfSubjectRulesReview", objectMeta(""), message(2, bytes(1, "team")), message(3, message(1, bytes(1, "get"))));
    expect(decodeProtobufObject(body)).toEqual({
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectRulesReview",
      metadata: {},
      spec: { namespace: "team" },
      status: { resourceRules: [{ verbs: ["get"] }] },
    });
  });
});
