// Both naming profiles name by name, and the parts that read them: signers, plug-ins, token claim and extras, bootstrap RBAC.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { groupNames, type GroupNames } from "../../src/api/group.js";
import { namingProfile } from "../../src/api/naming-profile.js";
import type { AuthorizationAttributes } from "../../src/apiserver/auth/authorizer.js";
import { bootstrapPolicy } from "../../src/apiserver/auth/bootstrap-policy.js";
import { RbacAuthorizer } from "../../src/apiserver/auth/rbac.js";
import { ServiceAccountTokens } from "../../src/apiserver/auth/service-account-tokens.js";
import { allResources } from "../../src/apiserver/registry/resources/index.js";
import { lastAppliedAnnotation } from "../../src/cli/ctl/apply.js";
import { createBuiltinSigners } from "../../signers/builtins.js";
import { loadSignerPlugin } from "../../signers/plugin.js";
import { StaticLister, T0, user } from "../apiserver/auth/fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

const product = groupNames();
const upstream = groupNames("k8s.io");

describe("naming profiles", () => {
  it.each<[string, (n: GroupNames) => unknown, unknown, unknown]>([
    ["profile", (n) => n.profile, "product", "upstream"],
    ["names domain", (n) => n.domain, "platform.io", "kubernetes.io"],
    ["certificates group (from the suffix, not the domain)", (n) => n.certificates, "certificates.platform.io", "certificates.k8s.io"],
    ["API server client signer", (n) => n.signers.apiserverClient, "platform.io/apiserver-client", "kubernetes.io/kube-apiserver-client"],
    ["node client signer", (n) => n.signers.nodeagentClient, "platform.io/apiserver-client-nodeagent", "kubernetes.io/kube-apiserver-client-kubelet"],
    ["node serving signer", (n) => n.signers.nodeagentServing, "platform.io/nodeagent-serving", "kubernetes.io/kubelet-serving"],
    ["legacy signer", (n) => n.signers.legacyUnknown, "platform.io/legacy-unknown", "kubernetes.io/legacy-unknown"],
    ["token private claim", (n) => n.tokenClaim, "platform.io", "kubernetes.io"],
    ["user-info extra prefix", (n) => n.userExtraPrefix, "authentication.platform.io", "authentication.kubernetes.io"],
    ["bootstrap label", (n) => n.bootstrappingLabel, "platform.io/bootstrapping", "kubernetes.io/bootstrapping"],
    ["autoupdate annotation", (n) => n.autoupdateAnnotation, "rbac.authorization.platform.io/autoupdate", "rbac.authorization.kubernetes.io/autoupdate"],
    ["last-applied annotation", (n) => lastAppliedAnnotation(n), "platformctl.platform.io/last-applied-configuration", "kubectl.kubernetes.io/last-applied-configuration"],
    ["TLS Secret type", (n) => n.secretTypes.tls, "platform.io/tls", "kubernetes.io/tls"],
    ["token Secret type", (n) => n.secretTypes.serviceAccountToken, "platform.io/service-account-token", "kubernetes.io/service-account-token"],
    ["token Secret annotation", (n) => n.secretTypes.serviceAccountNameAnnotation, "platform.io/service-account.name", "kubernetes.io/service-account.name"],
    ["nodeclient role", (n) => n.roles.nodeClient, "platform-ca:nodeagent-bootstrapper", "system:certificates.k8s.io:certificatesigningrequests:nodeclient"],
    ["selfnodeclient role", (n) => n.roles.selfNodeClient, "platform-ca:nodeagent-selfnodeclient", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"],
    ["approval message (first certificate)", (n) => n.approvalMessages.nodeclient, "Auto approving node-agent client certificate after SubjectAccessReview.", "Auto approving kubelet client certificate after SubjectAccessReview."],
    ["approval message (renewal)", (n) => n.approvalMessages.selfnodeclient, "Auto approving node-agent client certificate after SubjectAccessReview.", "Auto approving self kubelet client certificate after SubjectAccessReview."],
  ])("%s", (_, read, underDefault, underK8s) => {
    expect(read(product)).toEqual(underDefault);
    expect(read(upstream)).toEqual(underK8s);
  });

  it("gives any other suffix the product's names in that domain", () => {
    const other = groupNames("example.org");
    expect(other).toMatchObject({ profile: "product", domain: "example.org", tokenClaim: "example.org", signers: { nodeagentClient: "example.org/apiserver-client-nodeagent" } });
    expect(namingProfile("platform.io")).toEqual(Object.fromEntries(Object.keys(namingProfile("platform.io")).map((k) => [k, product[k as keyof GroupNames]])));
  });

  it.each([
    ["default", product],
    ["k8s.io", upstream],
  ])("names the built-in signers from the profile (%s)", (_, names) => {
    const signers = createBuiltinSigners({ groupSuffix: names.suffix, ca: { current: () => undefined } });
    expect(signers.map((s) => s.signerName)).toEqual([names.signers.apiserverClient, names.signers.nodeagentClient, names.signers.nodeagentServing, names.signers.legacyUnknown]);
  });
});

describe("the bootstrap RBAC policy under k8s.io", () => {
  const policy = bootstrapPolicy(upstream);
  const rbac = new RbacAuthorizer({ names: upstream, lister: StaticLister.of([...policy.clusterRoles, ...policy.clusterRoleBindings]) });
  const csrCreate = (who: ReturnType<typeof user>, subresource: string): AuthorizationAttributes => ({
    user: who,
    verb: "create",
    resourceRequest: true,
    group: "certificates.k8s.io",
    resource: "certificatesigningrequests",
    subresource,
  });
  const bootstrapper = user({ username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:authenticated"] });
  const node = user({ username: "system:node:worker-1", groups: ["system:nodes", "system:authenticated"] });

  it("uses upstream's role names, label and annotation", () => {
    const roles = policy.clusterRoles.map((r) => r.metadata.name);
    expect(roles).toContain("system:certificates.k8s.io:certificatesigningrequests:nodeclient");
    expect(roles).toContain("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient");
    expect(roles.some((r) => r!.includes("nodeagent"))).toBe(false);
    for (const obj of [...policy.clusterRoles, ...policy.clusterRoleBindings]) {
      // Besides upstream's bootstrapping label, only its aggregation labels (view into edit, edit into admin, ...).
      const { "kubernetes.io/bootstrapping": bootstrapping, ...others } = obj.metadata.labels ?? {};
      expect(bootstrapping).toBe("rbac-defaults");
      expect(Object.keys(others).filter((k) => !/^rbac\.authorization\.k8s\.io\/aggregate-to-(admin|edit|view)$/.test(k))).toEqual([]);
      expect(obj.metadata.annotations).toEqual({ "rbac.authorization.kubernetes.io/autoupdate": "true" });
    }
    const approve = policy.clusterRoles.flatMap((r) => r.rules ?? []).find((rule) => rule.verbs.includes("approve"));
    expect(approve?.resourceNames).toEqual(["kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"]);
  });

  it.each<[string, ReturnType<typeof user>, string, boolean]>([
    ["a bootstrapper may ask for a first node client certificate", bootstrapper, "nodeclient", true],
    ["a bootstrapper may not renew as a node", bootstrapper, "selfnodeclient", false],
    ["a node may renew its own", node, "selfnodeclient", true],
  ])("%s", async (_, who, subresource, allowed) => {
    expect((await rbac.authorize(csrCreate(who, subresource))).allowed).toBe(allowed);
  });

  it("validates under the k8s.io registry", () => {
    const defs = allResources(upstream);
    for (const obj of [...policy.clusterRoles, ...policy.clusterRoleBindings]) {
      const def = defs.find((d) => d.kind === obj.kind)!;
      const copy = structuredClone(obj);
      const ctx = { now: new Date(0), names: upstream };
      def.strategy.prepareForCreate(copy, ctx);
      expect(def.strategy.validate(copy, ctx)).toEqual([]);
    }
  });
});

describe("ServiceAccount tokens under k8s.io", () => {
  it("carry the kubernetes.io private claim and authentication.kubernetes.io extras", async () => {
    const clock = { now: () => T0 };
    const issuer = "https://platform-ca.test";
    const tokens = new ServiceAccountTokens({ dataDir: tempDir(), issuer, names: upstream, clock, apiAudiences: [issuer] });
    await tokens.start();
    const { token } = await tokens.issue({ namespace: "team", serviceAccount: { name: "builder", uid: "u1" }, audiences: [issuer], boundObject: { kind: "Pod", name: "web-0", uid: "p1" } });
    const payload = decodeJwt(token);
    expect(payload["kubernetes.io"]).toEqual({ namespace: "team", serviceaccount: { name: "builder", uid: "u1" }, pod: { name: "web-0", uid: "p1" } });
    expect(payload["k8s.io"]).toBeUndefined();
    const lookups = { serviceAccount: () => ({ uid: "u1" }), pod: () => ({ uid: "p1" }) };
    const status = await tokens.review(token, { lookups });
    expect(Object.keys(status.user?.extra ?? {}).sort()).toEqual(["authentication.kubernetes.io/credential-id", "authentication.kubernetes.io/pod-name", "authentication.kubernetes.io/pod-uid"]);
  });
});

describe("signer plug-ins", () => {
  it.each([
    ["k8s.io", "kubernetes.io"],
    ["platform.io", "platform.io"],
  ])("are told the names domain of suffix %s", async (groupSuffix, domain) => {
    const dir = tempDir();
    const file = join(dir, "plugin.mjs");
    writeFileSync(file, `export function createSigner(ctx) {
      return { signerName: ctx.namesDomain + "/mine", validate: () => ({ ok: true }), sign: async () => "", ready: () => true, trustAnchors: () => [] };
    }`);
    expect((await loadSignerPlugin(file, { groupSuffix })).signerName).toBe(`${domain}/mine`);
  });
});
