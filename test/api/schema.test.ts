import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { groupNames, type GroupNames } from "../../src/api/group.js";
import { childNode, kindSchema, listPatchMeta, schemaRegistry, type ObjectNode, type SchemaNode } from "../../src/api/schema.js";

const defaults = groupNames();
const k8s = groupNames("k8s.io");

/** Every node below `node` (itself included) with its dotted path, `[]` for list items and `{}` for map values. */
function allNodes(node: SchemaNode, path = ""): [string, SchemaNode][] {
  const below: [string, SchemaNode][] =
    node.type === "object"
      ? Object.entries(node.fields).flatMap(([k, child]) => allNodes(child, path ? `${path}.${k}` : k))
      : node.type === "list"
        ? allNodes(node.items, `${path}.[]`)
        : node.type === "map"
          ? allNodes(node.values, `${path}.{}`)
          : [];
  return [[path, node], ...below];
}

/** The node at a dotted path; `[]` steps into list items. */
function nodeAt(root: SchemaNode | undefined, path: string): SchemaNode | undefined {
  let node = root;
  for (const step of path.split(".")) {
    node = step === "[]" ? (node?.type === "list" ? node.items : undefined) : childNode(node, step);
  }
  return node;
}

const served: [keyof GroupNames | "core", string][] = [
  ["core", "ServiceAccount"],
  ["core", "Namespace"],
  ["core", "Secret"],
  ["core", "ConfigMap"],
  ["core", "Pod"],
  ["core", "Status"],
  ["core", "DeleteOptions"],
  ["authentication", "TokenRequest"],
  ["authentication", "TokenReview"],
  ["authentication", "SelfSubjectReview"],
  ["authorization", "SubjectAccessReview"],
  ["authorization", "SelfSubjectAccessReview"],
  ["certificates", "CertificateSigningRequest"],
  ["certificates", "ClusterTrustBundle"],
  ["certificates", "CertificateRevocation"],
  ["rbac", "Role"],
  ["rbac", "ClusterRole"],
  ["rbac", "RoleBinding"],
  ["rbac", "ClusterRoleBinding"],
  ["apps", "ControllerRevision"],
  ["events", "Event"],
  ["core", "Event"],
  ["authorization", "SelfSubjectRulesReview"],
  ["coordination", "Lease"],
];

const group = (names: GroupNames, role: keyof GroupNames | "core") => (role === "core" ? "" : (names[role] as string));

describe("field schema registry", () => {
  it.each(served)("serves the %s group's %s under either suffix", (role, kind) => {
    expect(schemaRegistry(defaults).lookup(group(defaults, role), kind)?.type).toBe("object");
    expect(schemaRegistry(k8s).lookup(group(k8s, role), kind)?.type).toBe("object");
  });

  it("lists exactly the served kinds and resolves groups from the suffix", () => {
    const kinds = schemaRegistry(k8s).kinds();
    expect(kinds).toHaveLength(served.length);
    expect(kinds).toContainEqual({ group: "certificates.k8s.io", kind: "CertificateSigningRequest" });
    expect(schemaRegistry(k8s).lookup("certificates.platform.io", "CertificateSigningRequest")).toBeUndefined();
  });

  it.each([
    [{ apiVersion: "v1", kind: "Secret" }, true],
    [{ apiVersion: `${defaults.events}/v1`, kind: "Event" }, true],
    [{ apiVersion: "apps/v1", kind: "ControllerRevision" }, true],
    [{ apiVersion: "example.com/v1", kind: "Widget" }, false],
    [{ kind: "Secret" }, false],
  ])("finds the schema of %j by its apiVersion: %s", (obj, found) => {
    expect(schemaRegistry().forObject(obj) !== undefined).toBe(found);
  });

  it.each([
    ["ServiceAccount", "", "secrets", { strategy: "merge", mergeKey: "name" }],
    ["ServiceAccount", "", "imagePullSecrets", { strategy: "atomic", mergeKey: "" }],
    ["ServiceAccount", "", "metadata.finalizers", { strategy: "merge", mergeKey: "" }],
    ["ServiceAccount", "", "metadata.ownerReferences", { strategy: "merge", mergeKey: "uid" }],
    ["ServiceAccount", "", "metadata.managedFields", { strategy: "atomic", mergeKey: "" }],
    ["CertificateSigningRequest", defaults.certificates, "spec.usages", { strategy: "atomic", mergeKey: "" }],
    ["CertificateSigningRequest", defaults.certificates, "spec.groups", { strategy: "atomic", mergeKey: "" }],
    ["CertificateSigningRequest", defaults.certificates, "status.conditions", { strategy: "merge", mergeKey: "type" }],
    ["RoleBinding", defaults.rbac, "subjects", { strategy: "atomic", mergeKey: "" }],
    ["ClusterRole", defaults.rbac, "rules.[].verbs", { strategy: "atomic", mergeKey: "" }],
    ["TokenRequest", defaults.authentication, "spec.audiences", { strategy: "atomic", mergeKey: "" }],
    ["Pod", "", "spec.containers", { strategy: "merge", mergeKey: "name" }],
    ["Pod", "", "spec.containers.[].env", { strategy: "merge", mergeKey: "name" }],
    ["Pod", "", "spec.containers.[].ports", { strategy: "merge", mergeKey: "containerPort" }],
    ["Pod", "", "spec.containers.[].args", { strategy: "atomic", mergeKey: "" }],
    ["Namespace", "", "spec.finalizers", { strategy: "atomic", mergeKey: "" }],
  ])("patches %s %s as the seed says", (kind, g, path, meta) => {
    const { strategy, mergeKey } = listPatchMeta(nodeAt(schemaRegistry().lookup(g, kind), path));
    expect({ strategy, mergeKey }).toEqual(meta);
  });

  it.each([
    ["ServiceAccount", "", "metadata.labels", "map"],
    ["Secret", "", "data", "map"],
    ["SubjectAccessReview", defaults.authorization, "spec.extra", "map"],
    ["SubjectAccessReview", defaults.authorization, "spec.resourceAttributes.subresource", "string"],
    ["Event", defaults.events, "deprecatedSource.host", "string"],
    ["Event", defaults.events, "series.count", "integer"],
    ["Lease", defaults.coordination, "spec.leaseTransitions", "integer"],
    ["ControllerRevision", "apps", "data", "any"],
    ["ClusterTrustBundle", defaults.certificates, "spec.trustBundle", "string"],
  ])("describes %s %s as %s", (kind, g, path, type) => {
    expect(nodeAt(schemaRegistry().lookup(g, kind), path)?.type).toBe(type);
  });

  it("writes no group suffix into the schema sources", () => {
    const dir = new URL("../../src/api/schema/", import.meta.url);
    const sources = [new URL("../../src/api/schema.ts", import.meta.url), ...readdirSync(dir).map((f) => new URL(f, dir))];
    for (const file of sources) expect(readFileSync(file, "utf8")).not.toMatch(/platform\.io|k8s\.io/);
  });

  it("says for every list how apply and strategic merge patch treat it, and the two agree", () => {
    for (const { kind } of schemaRegistry().kinds()) {
      for (const [path, node] of allNodes(kindSchema(kind))) {
        if (node.type !== "list") continue;
        const where = `${kind} ${path}`;
        if (node.listType === "map") {
          const items = node.items as ObjectNode;
          expect(node.mapKeys?.length, where).toBeGreaterThan(0);
          for (const k of node.mapKeys ?? []) expect(Object.keys(items.fields), where).toContain(k);
          expect(node.mapKeys, where).toContain(node.patchMergeKey);
        } else {
          expect(node.mapKeys, where).toBeUndefined();
          expect(node.patchMergeKey, where).toBeUndefined();
        }
        if (node.listType === "set") expect(["string", "integer", "number", "boolean"], where).toContain(node.items.type);
        expect(listPatchMeta(node).strategy, where).toBe(node.listType === "atomic" ? "atomic" : "merge");
      }
    }
  });

  it("makes required fields explicit and names only known fields", () => {
    for (const { kind } of schemaRegistry().kinds()) {
      for (const [path, node] of allNodes(kindSchema(kind))) {
        if (node.type !== "object") continue;
        expect(Array.isArray(node.required), `${kind} ${path}`).toBe(true);
        for (const name of node.required) expect(Object.keys(node.fields), `${kind} ${path}`).toContain(name);
      }
    }
    expect(kindSchema("CertificateSigningRequest").required).toEqual(["spec"]);
    expect((nodeAt(kindSchema("CertificateSigningRequest"), "spec") as ObjectNode).required).toEqual(["request", "signerName"]);
    expect((nodeAt(kindSchema("CertificateSigningRequest"), "status.conditions.[]") as ObjectNode).required).toEqual(["type", "status"]);
    expect((nodeAt(kindSchema("ClusterTrustBundle"), "spec") as ObjectNode).required).toEqual(["trustBundle"]);
  });

  it.each([
    ["CertificateSigningRequest", "status.conditions", { listType: "map", mapKeys: ["type"], patchStrategy: "merge", patchMergeKey: "type" }],
    ["CertificateSigningRequest", "spec.usages", { listType: "atomic" }],
    ["ServiceAccount", "metadata.finalizers", { listType: "set", patchStrategy: "merge" }],
    ["Pod", "spec.containers.[].ports", { listType: "map", mapKeys: ["containerPort", "protocol"], patchStrategy: "merge", patchMergeKey: "containerPort" }],
    ["Pod", "spec.volumes", { listType: "map", mapKeys: ["name"], patchStrategy: "merge,retainKeys", patchMergeKey: "name" }],
  ])("gives %s %s upstream's list extensions", (kind, path, extensions) => {
    expect(nodeAt(kindSchema(kind), path)).toMatchObject(extensions);
  });

  it.each([
    ["CertificateSigningRequest", "spec.request", { type: "string", format: "byte" }],
    ["CertificateSigningRequest", "status.certificate", { type: "string", format: "byte" }],
    ["CertificateSigningRequest", "spec.expirationSeconds", { type: "integer", format: "int32" }],
    ["CertificateSigningRequest", "status.conditions.[].lastTransitionTime", { type: "string", format: "date-time" }],
    ["TokenRequest", "spec.expirationSeconds", { type: "integer", format: "int64" }],
    ["Secret", "data.{}", { type: "string", format: "byte" }],
    ["Event", "eventTime", { type: "string", format: "date-time" }],
  ])("gives %s %s its format", (kind, path, expected) => {
    const node = allNodes(kindSchema(kind)).find(([p]) => p === path)?.[1];
    expect(node).toMatchObject(expected);
  });

  it.each(["CertificateSigningRequest", "ClusterTrustBundle"])("describes every field of %s in one line", (kind) => {
    for (const [path, node] of allNodes(kindSchema(kind))) {
      if (node.type !== "object") continue;
      for (const [name, child] of Object.entries(node.fields)) {
        expect(child.description, `${kind} ${path}.${name}`).toMatch(/^[A-Z][^\n]+\.$/);
      }
    }
  });

  it("numbers protobuf fields uniquely within each message, as upstream's generated.proto", () => {
    for (const { kind } of schemaRegistry().kinds()) {
      for (const [path, node] of allNodes(kindSchema(kind))) {
        if (node.type !== "object") continue;
        const numbers = Object.values(node.fields).flatMap((child) => (child.protobuf === undefined ? [] : [child.protobuf]));
        expect(new Set(numbers).size, `${kind} ${path}`).toBe(numbers.length);
      }
    }
  });

  it.each([
    ["CertificateSigningRequest", "metadata", 1],
    ["CertificateSigningRequest", "spec", 2],
    ["CertificateSigningRequest", "spec.signerName", 7],
    ["CertificateSigningRequest", "spec.expirationSeconds", 8],
    ["CertificateSigningRequest", "status.conditions.[].status", 6],
    ["CertificateSigningRequest", "status.certificate", 2],
    ["SelfSubjectReview", "status", 2],
    ["ServiceAccount", "metadata.managedFields", 17],
    ["Pod", "spec", undefined],
  ])("gives %s %s the protobuf field number %s", (kind, path, n) => {
    expect(allNodes(kindSchema(kind)).find(([p]) => p === path)?.[1].protobuf).toBe(n);
  });
});
