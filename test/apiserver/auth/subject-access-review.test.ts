// SubjectAccessReview: status from the authorizer for resource and non-resource questions, and refused specs.
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { createSubjectAccessReviewHandler } from "../../../src/apiserver/auth/subject-access-review.js";
import { isPlatformError } from "../../../src/errors.js";
import { clusterRole, clusterRoleBinding, groupSubject, names, roleBinding, rule, StaticLister, user, userSubject } from "./fixtures.js";

const CERT = names.certificates;
const rbac = new RbacAuthorizer({
  names,
  lister: new StaticLister({
    clusterRoles: [
      clusterRole("approver", [rule({ apiGroups: [CERT], resources: ["signers"], resourceNames: [names.signers.nodeagentClient], verbs: ["approve"] })]),
      clusterRole("metrics", [rule({ nonResourceURLs: ["/metrics"], verbs: ["get"] })]),
    ],
    clusterRoleBindings: [clusterRoleBinding("approvers", "approver", [groupSubject("approvers")]), clusterRoleBinding("metrics", "metrics", [userSubject("prom")])],
    roleBindings: [roleBinding("team", "dangling", { kind: "Role", name: "gone" }, [userSubject("erin")])],
  }),
});
const handler = createSubjectAccessReviewHandler(rbac);
const ctx = { now: new Date(Date.UTC(2030, 0, 1)), names, user: user({ username: "controller" }) };

function review(spec: Record<string, unknown>, extra: Record<string, unknown> = {}): ApiObject {
  return { apiVersion: `${names.authorization}/v1`, kind: "SubjectAccessReview", metadata: {}, spec, ...extra };
}
const approveNode = { resourceAttributes: { verb: "approve", group: CERT, resource: "signers", name: names.signers.nodeagentClient } };

describe("createSubjectAccessReviewHandler", () => {
  it.each([
    ["a group that may", { groups: ["approvers"], ...approveNode }, { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "approvers" of ClusterRole "approver" to Group "approvers"' }],
    ["a user that may not", { user: "mallory", groups: ["system:authenticated"], ...approveNode }, { allowed: false }],
    ["another signer", { groups: ["approvers"], resourceAttributes: { ...approveNode.resourceAttributes, name: names.signers.apiserverClient } }, { allowed: false }],
    ["a non-resource path that may", { user: "prom", nonResourceAttributes: { verb: "get", path: "/metrics" } }, { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "metrics" of ClusterRole "metrics" to User "prom"' }],
    ["a non-resource path with the wrong verb", { user: "prom", nonResourceAttributes: { verb: "post", path: "/metrics" } }, { allowed: false }],
  ])("answers for %s", async (_name, spec, status) => {
    const out = await handler(review(spec), ctx);
    expect(out.status).toEqual(status);
    expect(out.spec).toEqual(spec);
  });

  it("reports an evaluation error beside the decision", async () => {
    const out = await handler(review({ user: "erin", resourceAttributes: { verb: "get", resource: "pods", namespace: "team" } }), ctx);
    const error = 'RoleBinding "team/dangling": roles.rbac.authorization.platform.io "gone" not found in the namespace "team"';
    expect(out.status).toEqual({ allowed: false, reason: `RBAC: ${error}`, evaluationError: error });
  });

  it("ignores a status the client sent", async () => {
    const out = await handler(review({ user: "mallory", ...approveNode }, { status: { allowed: true } }), ctx);
    expect(out.status).toEqual({ allowed: false });
  });

  it.each([
    ["both kinds of attributes", { user: "u", ...approveNode, nonResourceAttributes: { verb: "get", path: "/" } }, "spec.nonResourceAttributes"],
    ["no attributes", { user: "u" }, "spec.resourceAttributes"],
    ["neither user nor groups", { ...approveNode }, "spec.user"],
  ])("refuses a spec with %s as INVALID", async (_name, spec, field) => {
    const err = await handler(review(spec), ctx).catch((e: unknown) => e);
    expect(isPlatformError(err, "INVALID")).toBe(true);
    expect((err as { causes: { field: string }[] }).causes.map((c) => c.field)).toEqual([field]);
  });
});
