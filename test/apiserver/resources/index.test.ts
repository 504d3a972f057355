import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import type { ApiObject } from "../../../src/api/meta.js";
import { allResources } from "../../../src/apiserver/registry/resources/index.js";
import { ctx, NOW } from "./fixtures.js";

const defs = allResources(groupNames());

describe("allResources", () => {
  it.each([
    ["Namespace", "", false],
    ["ServiceAccount", "", true],
    ["Secret", "", true],
    ["ConfigMap", "", true],
    ["Pod", "", true],
    ["TokenReview", "authentication.platform.io", false],
    ["SelfSubjectReview", "authentication.platform.io", false],
    ["SubjectAccessReview", "authorization.platform.io", false],
    ["SelfSubjectAccessReview", "authorization.platform.io", false],
    ["CertificateSigningRequest", "certificates.platform.io", false],
    ["ClusterTrustBundle", "certificates.platform.io", false],
    ["Role", "rbac.authorization.platform.io", true],
    ["ClusterRole", "rbac.authorization.platform.io", false],
    ["RoleBinding", "rbac.authorization.platform.io", true],
    ["ClusterRoleBinding", "rbac.authorization.platform.io", false],
    ["ControllerRevision", "apps", true],
    ["Event", "events.platform.io", true],
    ["Lease", "coordination.platform.io", true],
  ])("serves %s in group %j (namespaced: %s)", (kind, group, namespaced) => {
    expect(defs.find((d) => d.kind === kind)).toMatchObject({ group, namespaced, listKind: `${kind}List`, singular: kind.toLowerCase() });
  });

  it("serves each plural once per group", () => {
    const keys = defs.map((d) => `${d.group}/${d.plural}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(defs).toHaveLength(21);
  });

  it("builds every group from the suffix, never from a literal one", () => {
    const other = allResources(groupNames("example.org"));
    expect(JSON.stringify(other.map((d) => d.group))).not.toContain("platform.io");
    expect(other.filter((d) => d.group.endsWith(".example.org")).length).toBe(defs.filter((d) => d.group.endsWith(".platform.io")).length);
  });

  it.each(defs.filter((d) => d.columns).map((d) => [d.kind, d] as const))("gives %s one table cell per column, even for a bare object", (_, def) => {
    const bare: ApiObject = { apiVersion: "v1", kind: def.kind, metadata: { name: "bare" } };
    expect(def.row?.(bare, NOW)).toHaveLength(def.columns!.length);
  });

  it.each(defs.filter((d) => !d.createOnly).map((d) => [d.kind, d] as const))("gives %s table columns", (_, def) => {
    expect(def.columns?.length).toBeGreaterThan(0);
  });
});

/** Bodies of any JSON shape for a kind's usual top-level fields. */
const garbage = fc.dictionary(
  fc.constantFrom(
    ...["spec", "status", "data", "type", "rules", "aggregationRule", "roleRef", "subjects", "revision", "secrets", "imagePullSecrets"],
    ...["eventTime", "series", "regarding", "note", "reason", "reportingController", "reportingInstance", "deprecatedSource", "deprecatedCount"],
    ...["stringData", "immutable"],
  ),
  fc.jsonValue({ maxDepth: 3 }),
  { maxKeys: 6 },
);

describe("strategies on malformed bodies", () => {
  it.each(defs.map((d) => [d.kind, d] as const))("%s answers field errors, never throws", (_, def) => {
    fc.assert(
      fc.property(garbage, garbage, (a, b) => {
        const meta = { name: "x", namespace: "default" };
        const previous = { apiVersion: "v1", kind: def.kind, metadata: meta, ...a } as ApiObject;
        const next = { apiVersion: "v1", kind: def.kind, metadata: meta, ...b } as ApiObject;
        def.strategy.prepareForCreate(previous, ctx());
        expect(Array.isArray(def.strategy.validate(previous, ctx()))).toBe(true);
        def.strategy.prepareForUpdate(next, previous, ctx());
        def.strategy.specChanged?.(next, previous);
        expect(Array.isArray(def.strategy.validateUpdate(next, previous, ctx()))).toBe(true);
        for (const [name, sub] of Object.entries(def.strategy.subresources ?? {})) {
          const copy = structuredClone({ ...next, ...b }) as ApiObject;
          sub.prepareForUpdate(copy, previous, ctx({ subresource: name }));
          expect(Array.isArray(sub.validateUpdate(copy, previous, ctx({ subresource: name })))).toBe(true);
        }
        def.row?.(next, NOW);
      }),
      { numRuns: 150, seed: 20300102 },
    );
  });
});
