// Bootstrap policy: valid objects, what each built-in identity may and may not do, another suffix, and idempotent creation.
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import type { ApiObject } from "../../../src/api/meta.js";
import type { AuthorizationAttributes } from "../../../src/apiserver/auth/authorizer.js";
import { applyBootstrapPolicy, BASIC_USER_ROLE, bootstrapPolicy, CONTROLLER_SERVICE_ACCOUNT, CONTROLLER_USER, DISCOVERY_ROLE, PUBLIC_INFO_ROLE, type BootstrapWriter } from "../../../src/apiserver/auth/bootstrap-policy.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { allResources } from "../../../src/apiserver/registry/resources/index.js";
import { PlatformError } from "../../../src/errors.js";
import { names, StaticLister, user } from "./fixtures.js";

const CERT = names.certificates;
const policy = bootstrapPolicy(names);
const rbac = new RbacAuthorizer({ names, lister: StaticLister.of([...policy.clusterRoles, ...policy.clusterRoleBindings]) });

const controller = user({ username: CONTROLLER_USER, groups: ["system:authenticated"] });
const controllerSa = user({ username: `system:serviceaccount:${CONTROLLER_SERVICE_ACCOUNT.namespace}:${CONTROLLER_SERVICE_ACCOUNT.name}`, groups: ["system:serviceaccounts", "system:authenticated"] });
const bootstrapper = user({ username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:authenticated"] });
const node = user({ username: "system:node:worker-1", groups: ["system:nodes", "system:authenticated"] });
const someone = user({ username: "dave", groups: ["system:authenticated"] });
const anonymous = user({ username: "system:anonymous", groups: ["system:unauthenticated"] });
const master = user({ username: "root", groups: ["system:masters", "system:authenticated"] });

const res = (who: typeof someone, verb: string, group: string, resource: string, o: { subresource?: string; name?: string; namespace?: string } = {}): AuthorizationAttributes => ({
  user: who,
  verb,
  resourceRequest: true,
  group,
  resource,
  ...o,
});
const url = (who: typeof someone, path: string): AuthorizationAttributes => ({ user: who, verb: "get", resourceRequest: false, path });

describe("bootstrapPolicy", () => {
  it("passes the registry's validation for every object", () => {
    const defs = allResources(names);
    for (const obj of [...policy.clusterRoles, ...policy.clusterRoleBindings]) {
      const def = defs.find((d) => d.kind === obj.kind)!;
      const copy = structuredClone(obj) as ApiObject;
      const ctx = { now: new Date(0), names };
      def.strategy.prepareForCreate(copy, ctx);
      expect({ name: obj.metadata.name, errors: def.strategy.validate(copy, ctx) }).toEqual({ name: obj.metadata.name, errors: [] });
    }
  });

  it.each<[string, AuthorizationAttributes, boolean]>([
    ["system:masters may do anything", res(master, "deletecollection", "x.io", "things", { namespace: "n" }), true],
    ["system:masters may read any path", url(master, "/metrics"), true],
    ["the controller lists CSRs", res(controller, "list", CERT, "certificatesigningrequests"), true],
    ["the controller deletes old CSRs (the cleaner)", res(controller, "delete", CERT, "certificatesigningrequests", { name: "x" }), true],
    ["the controller may not delete CSRs in bulk", res(controller, "deletecollection", CERT, "certificatesigningrequests"), false],
    ["the controller updates /approval", res(controller, "update", CERT, "certificatesigningrequests", { subresource: "approval", name: "x" }), true],
    ["the controller updates /status", res(controller, "update", CERT, "certificatesigningrequests", { subresource: "status", name: "x" }), true],
    ["the controller approves for the node-agent client signer", res(controller, "approve", CERT, "signers", { name: names.signers.nodeagentClient }), true],
    ["the controller may not approve for a custom signer", res(controller, "approve", CERT, "signers", { name: "example.com/x" }), false],
    ["the controller signs for a custom signer", res(controller, "sign", CERT, "signers", { name: "example.com/x" }), true],
    ["the controller attests", res(controller, "attest", CERT, "signers", { name: names.signers.apiserverClient }), true],
    ["the controller creates trust bundles", res(controller, "create", CERT, "clustertrustbundles"), true],
    ["the controller records core Events", res(controller, "create", "", "events", { namespace: "default" }), true],
    ["the controller patches events.<suffix> Events", res(controller, "patch", names.events, "events", { namespace: "default", name: "e" }), true],
    ["the controller may not delete Events", res(controller, "delete", "", "events", { namespace: "default", name: "e" }), false],
    ["the controller updates its lease", res(controller, "update", names.coordination, "leases", { namespace: "platform-system", name: "platform-ca" }), true],
    ["the controller may not delete leases", res(controller, "delete", names.coordination, "leases", { namespace: "platform-system", name: "platform-ca" }), false],
    ["the controller asks SubjectAccessReviews", res(controller, "create", names.authorization, "subjectaccessreviews"), true],
    ["the controller writes aggregated ClusterRoles' rules (escalate)", res(controller, "escalate", names.rbac, "clusterroles", { name: "view" }), true],
    ["the controller may not delete ClusterRoles", res(controller, "delete", names.rbac, "clusterroles", { name: "view" }), false],
    ["the controller's ServiceAccount has the same role", res(controllerSa, "update", CERT, "certificatesigningrequests", { subresource: "status", name: "x" }), true],
    ["a bootstrapper creates CSRs", res(bootstrapper, "create", CERT, "certificatesigningrequests"), true],
    ["a bootstrapper passes the nodeclient check", res(bootstrapper, "create", CERT, "certificatesigningrequests", { subresource: "nodeclient" }), true],
    ["a bootstrapper does not pass the selfnodeclient check", res(bootstrapper, "create", CERT, "certificatesigningrequests", { subresource: "selfnodeclient" }), false],
    ["a bootstrapper may not approve", res(bootstrapper, "update", CERT, "certificatesigningrequests", { subresource: "approval", name: "x" }), false],
    ["a node passes the selfnodeclient check", res(node, "create", CERT, "certificatesigningrequests", { subresource: "selfnodeclient" }), true],
    ["a node creates CSRs to renew its certificate", res(node, "create", CERT, "certificatesigningrequests"), true],
    ["a node may not approve CSRs", res(node, "update", CERT, "certificatesigningrequests", { subresource: "approval", name: "x" }), false],
    ["a node does not pass the nodeclient check", res(node, "create", CERT, "certificatesigningrequests", { subresource: "nodeclient" }), false],
    ["any authenticated user lists trust bundles", res(someone, "list", CERT, "clustertrustbundles"), true],
    ["a ServiceAccount watches trust bundles", res(controllerSa, "watch", CERT, "clustertrustbundles"), true],
    ["an authenticated user may not create trust bundles", res(someone, "create", CERT, "clustertrustbundles"), false],
    ["an authenticated user asks who they are", res(someone, "create", names.authentication, "selfsubjectreviews"), true],
    ["an authenticated user asks what they may do", res(someone, "create", names.authorization, "selfsubjectaccessreviews"), true],
    ["anonymous may not ask what they may do", res(anonymous, "create", names.authorization, "selfsubjectaccessreviews"), false],
    ["an authenticated user reads discovery", url(someone, `/apis/${CERT}/v1`), true],
    ["an authenticated user may not read /metrics", url(someone, "/metrics"), false],
    ["anonymous may not read trust bundles", res(anonymous, "get", CERT, "clustertrustbundles", { name: "b" }), false],
    ["anonymous reads /healthz", url(anonymous, "/healthz"), true],
    ["anonymous may not read discovery", url(anonymous, "/apis"), false],
  ])("%s", (_name, attributes, allowed) => {
    const d = rbac.authorize(attributes);
    expect(d.allowed).toBe(allowed);
    expect(d.evaluationErrors).toEqual([]);
  });

  it("has upstream's unbound roles under k8s.io: admin, edit, view aggregated, the node bootstrapper, an approver per built-in signer", () => {
    const k8s = groupNames("k8s.io");
    const roles = new Map(bootstrapPolicy(k8s).clusterRoles.map((r) => [r.metadata.name!, r]));
    const bound = new Set(bootstrapPolicy(k8s).clusterRoleBindings.map((b) => b.roleRef.name));
    const upstream = [
      "admin", "edit", "view", "system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view", "system:node-bootstrapper",
      "system:certificates.k8s.io:kube-apiserver-client-approver", "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
      "system:certificates.k8s.io:kubelet-serving-approver", "system:certificates.k8s.io:legacy-unknown-approver",
    ];
    for (const name of upstream) expect({ name, present: roles.has(name), bound: bound.has(name) }).toEqual({ name, present: true, bound: false });
    expect(roles.get("system:certificates.k8s.io:kubelet-serving-approver")!.rules).toEqual([{ apiGroups: ["certificates.k8s.io"], resources: ["signers"], resourceNames: ["kubernetes.io/kubelet-serving"], verbs: ["approve"] }]);
    expect(roles.get("view")!.aggregationRule).toEqual({ clusterRoleSelectors: [{ matchLabels: { "rbac.authorization.k8s.io/aggregate-to-view": "true" } }] });
    expect(roles.get("view")!.metadata.labels).toMatchObject({ "rbac.authorization.k8s.io/aggregate-to-edit": "true" });
    expect(roles.get("edit")!.metadata.labels).toMatchObject({ "rbac.authorization.k8s.io/aggregate-to-admin": "true" });
    expect(roles.get("system:aggregate-to-view")!.rules!.some((r) => r.resources?.includes("secrets"))).toBe(false);
    // The product's names for the same roles.
    const ours = new Set(policy.clusterRoles.map((r) => r.metadata.name!));
    expect(["platform-ca:node-bootstrapper", "platform-ca:apiserver-client-approver", "platform-ca:apiserver-client-nodeagent-approver", "platform-ca:nodeagent-serving-approver", "platform-ca:legacy-unknown-approver"].filter((n) => !ours.has(n))).toEqual([]);
  });

  it("derives every group from the configured suffix", () => {
    const k8s = groupNames("k8s.io");
    const text = JSON.stringify(bootstrapPolicy(k8s));
    expect(text).toContain('"certificates.k8s.io"');
    expect(text).toContain('"rbac.authorization.k8s.io"');
    expect(text).not.toContain("platform.io");
  });
});

describe("applyBootstrapPolicy", () => {
  function store() {
    const objects = new Map<string, ApiObject>();
    const key = (obj: ApiObject) => `${obj.kind}/${obj.metadata.name}`;
    const writer: BootstrapWriter = {
      create: async (obj) => {
        if (objects.has(key(obj))) throw new PlatformError("ALREADY_EXISTS", `${key(obj)} already exists`);
        objects.set(key(obj), obj);
      },
      modify: async (obj, change) => {
        objects.set(key(obj), change(objects.get(key(obj))!));
      },
    };
    return { objects, writer };
  }
  const AUTOUPDATE = `${names.rbac}/autoupdate`;

  it("creates every object on first start and nothing on the next", async () => {
    const s = store();
    const first = await applyBootstrapPolicy(names, s.writer);
    expect(first.created).toHaveLength(policy.clusterRoles.length + policy.clusterRoleBindings.length);
    expect(first.created.indexOf("ClusterRole/cluster-admin")).toBeLessThan(first.created.indexOf("ClusterRoleBinding/cluster-admin"));
    expect(await applyBootstrapPolicy(names, s.writer)).toEqual({ created: [], updated: [] });
  });

  it("adds the rules and subjects an object made by an older release lacks, and keeps what an administrator added", async () => {
    const s = store();
    const mine = { apiGroups: ["example.test"], resources: ["widgets"], verbs: ["get"] };
    const old = { apiVersion: `${names.rbac}/v1`, kind: "ClusterRole", metadata: { name: BASIC_USER_ROLE, annotations: { [AUTOUPDATE]: "true" } }, rules: [mine] };
    s.objects.set(`ClusterRole/${BASIC_USER_ROLE}`, old);
    const binding = policy.clusterRoleBindings.find((b) => b.metadata.name === BASIC_USER_ROLE)!;
    s.objects.set(`ClusterRoleBinding/${BASIC_USER_ROLE}`, { ...structuredClone(binding), subjects: [] } as unknown as ApiObject);
    const result = await applyBootstrapPolicy(names, s.writer);
    expect(result.updated).toEqual([`ClusterRole/${BASIC_USER_ROLE}`, `ClusterRoleBinding/${BASIC_USER_ROLE}`]);
    const wanted = policy.clusterRoles.find((r) => r.metadata.name === BASIC_USER_ROLE)!;
    expect(s.objects.get(`ClusterRole/${BASIC_USER_ROLE}`)!["rules"]).toEqual([mine, ...(wanted.rules ?? [])]);
    expect(s.objects.get(`ClusterRoleBinding/${BASIC_USER_ROLE}`)!["subjects"]).toEqual(binding.subjects);
    expect((await applyBootstrapPolicy(names, s.writer)).updated).toEqual([]);
  });

  it("leaves an object alone whose autoupdate annotation is false, an aggregated role, and a binding to another role", async () => {
    const s = store();
    const optedOut = { apiVersion: `${names.rbac}/v1`, kind: "ClusterRole", metadata: { name: BASIC_USER_ROLE, annotations: { [AUTOUPDATE]: "false" } }, rules: [] };
    const aggregated = { apiVersion: `${names.rbac}/v1`, kind: "ClusterRole", metadata: { name: DISCOVERY_ROLE }, aggregationRule: { clusterRoleSelectors: [] }, rules: [] };
    const binding = structuredClone(policy.clusterRoleBindings.find((b) => b.metadata.name === PUBLIC_INFO_ROLE)!);
    const otherRole = { ...binding, roleRef: { ...binding.roleRef, name: "someone-else" }, subjects: [] } as unknown as ApiObject;
    for (const obj of [optedOut, aggregated, otherRole] as ApiObject[]) s.objects.set(`${obj.kind}/${obj.metadata.name}`, obj);
    expect((await applyBootstrapPolicy(names, s.writer)).updated).toEqual([]);
    expect(s.objects.get(`ClusterRole/${BASIC_USER_ROLE}`)).toBe(optedOut);
    expect(s.objects.get(`ClusterRole/${DISCOVERY_ROLE}`)).toBe(aggregated);
    expect(s.objects.get(`ClusterRoleBinding/${PUBLIC_INFO_ROLE}`)).toBe(otherRole);
  });

  it("passes on failures other than ALREADY_EXISTS", async () => {
    const failing: BootstrapWriter = { create: () => Promise.reject(new PlatformError("STORAGE_UNAVAILABLE", "down")), modify: () => Promise.resolve() };
    await expect(applyBootstrapPolicy(names, failing)).rejects.toThrow("down");
  });
});
