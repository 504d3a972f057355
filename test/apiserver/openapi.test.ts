// The published OpenAPI documents: every field of the field schema appears with its type, format and list semantics.
import { describe, expect, it } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { schemaRegistry, type SchemaNode } from "../../src/api/schema.js";
import { ApiCatalog } from "../../src/apiserver/discovery.js";
import { indexPath, openApiV2, openApiV3, publishedApis } from "../../src/apiserver/openapi/documents.js";
import { allResources } from "../../src/apiserver/registry/resources/index.js";

type Json = Record<string, any>;

const catalogFor = (suffix: string) => {
  const names = groupNames(suffix);
  return new ApiCatalog(allResources(names), names);
};

/** Follows `$ref` (bare in v2, wrapped in allOf in v3) to the definition it names. */
function resolve(schema: Json, defs: Json, prefix: string): Json {
  const ref = schema.$ref ?? schema.allOf?.[0]?.$ref;
  if (ref === undefined) return schema;
  expect(ref.startsWith(prefix), ref).toBe(true);
  const target = defs[ref.slice(prefix.length)];
  expect(target, `${ref} resolves`).toBeDefined();
  return target;
}

/** Every field path of `node`, with the published schema it must match; fails on the first missing field. */
function compare(node: SchemaNode, published: Json, defs: Json, prefix: string, path: string): number {
  const at = resolve(published, defs, prefix);
  switch (node.type) {
    case "object": {
      expect(at.type, path).toBe("object");
      expect(at.required ?? [], path).toEqual(node.required);
      expect(at["x-kubernetes-preserve-unknown-fields"], path).toBe(node.preserveUnknown);
      let n = 0;
      for (const [field, child] of Object.entries(node.fields)) {
        expect(at.properties, `${path}.${field}`).toHaveProperty([field]);
        if (child.description) expect(at.properties[field].description, `${path}.${field}`).toBe(child.description);
        n += 1 + compare(child, at.properties[field], defs, prefix, `${path}.${field}`);
      }
      expect(Object.keys(at.properties).sort(), path).toEqual(Object.keys(node.fields).sort());
      return n;
    }
    case "map":
      expect(at.type, path).toBe("object");
      return compare(node.values, at.additionalProperties, defs, prefix, `${path}[key]`);
    case "list":
      expect(at.type, path).toBe("array");
      expect(at["x-kubernetes-list-type"], path).toBe(node.listType);
      expect(at["x-kubernetes-list-map-keys"], path).toEqual(node.mapKeys);
      expect(at["x-kubernetes-patch-strategy"], path).toBe(node.patchStrategy);
      expect(at["x-kubernetes-patch-merge-key"], path).toBe(node.patchMergeKey);
      return compare(node.items, at.items, defs, prefix, `${path}[]`);
    case "any":
      expect(at, path).toMatchObject({ type: "object", "x-kubernetes-preserve-unknown-fields": true });
      return 0;
    default:
      expect(at.type, path).toBe(node.type);
      expect(at.format, path).toBe(node.format);
      return 0;
  }
}

/** Every `$ref` in `doc`. */
function refs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => refs(v, out));
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) k === "$ref" ? out.push(v as string) : refs(v, out);
  }
  return out;
}

const kindsIn = (defs: Json) =>
  Object.entries(defs).flatMap(([name, d]) => ((d as Json)["x-kubernetes-group-version-kind"] ?? []).map((gvk: Json) => ({ name, ...gvk })));

describe.each(["platform.io", "k8s.io"])("published schemas under %s", (suffix) => {
  const catalog = catalogFor(suffix);
  const registry = schemaRegistry(catalog.names);
  const v2 = openApiV2(catalog) as Json;

  it("round-trips every field of every kind into its group/version's v3 document and into v2", () => {
    for (const { group, kind } of registry.kinds()) {
      const versions = catalog.definitions.filter((d) => d.group === group && d.kind === kind).map((d) => d.version);
      for (const version of versions.length > 0 ? versions : catalog.versionsOf(group).slice(0, 1)) {
        for (const [defs, prefix] of [
          [(openApiV3(catalog, group, version) as Json).components.schemas, "#/components/schemas/"],
          [v2.definitions, "#/definitions/"],
        ] as const) {
          const found = kindsIn(defs).filter((k: Json) => k.group === group && k.version === version && k.kind === kind);
          expect(found, `${group}/${version} ${kind}`).toHaveLength(1);
          expect(defs[found[0].name].description, `${kind} is described`).toEqual(expect.any(String));
          const fields = compare(registry.lookup(group, kind)!, defs[found[0].name], defs, prefix, kind);
          expect(fields).toBeGreaterThanOrEqual(3);
        }
      }
    }
  });

  it("names definitions as upstream, with the suffix reversed", () => {
    const root = suffix.split(".").reverse().join(".");
    const doc = openApiV3(catalog, catalog.names.certificates, "v1") as Json;
    const csr = doc.components.schemas[`${root}.api.certificates.v1.CertificateSigningRequest`];
    expect(csr["x-kubernetes-group-version-kind"]).toEqual([{ group: catalog.names.certificates, version: "v1", kind: "CertificateSigningRequest" }]);
    expect(csr.properties.metadata.allOf).toEqual([{ $ref: `#/components/schemas/${root}.apimachinery.pkg.apis.meta.v1.ObjectMeta` }]);
    expect(csr.properties.spec.allOf).toEqual([{ $ref: `#/components/schemas/${root}.api.certificates.v1.CertificateSigningRequestSpec` }]);
    const status = doc.components.schemas[`${root}.api.certificates.v1.CertificateSigningRequestStatus`];
    expect(status.properties.conditions).toMatchObject({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"], "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "type" });
    expect(doc.components.schemas[`${root}.api.certificates.v1.CertificateSigningRequestList`]).toBeDefined();
    // List items are named in the singular.
    expect(Object.keys(v2.definitions)).toEqual(expect.arrayContaining([`${root}.api.core.v1.PodStatusContainerStatus`, `${root}.api.core.v1.PodSpecContainer`]));
    if (suffix === "k8s.io") expect(Object.keys(v2.definitions)).toContain("io.k8s.api.rbac.v1.ClusterRoleBinding");
  });

  it("is structurally valid OpenAPI 3.0 for every group/version: references resolve, operations answer, kinds are unique", () => {
    for (const [path] of publishedApis(catalog).v3) {
      const [group, version] = path.startsWith("apis/") ? path.split("/").slice(1) : ["", path.split("/")[1]!];
      const doc = openApiV3(catalog, group!, version!) as Json;
      expect(doc).toMatchObject({ openapi: "3.0.0", info: { title: expect.any(String), version: expect.any(String) } });
      for (const ref of refs(doc)) expect(doc.components.schemas, ref).toHaveProperty([ref.replace("#/components/schemas/", "")]);
      for (const schema of Object.values(doc.components.schemas) as Json[]) expect(schema.type, JSON.stringify(schema)).toBe("object");
      const gvks = kindsIn(doc.components.schemas).map((k: Json) => `${k.group}/${k.version}/${k.kind}`);
      expect(new Set(gvks).size).toBe(gvks.length);
      for (const [p, item] of Object.entries(doc.paths) as [string, Json][]) {
        expect(p.startsWith(group ? `/apis/${group}/${version}/` : `/api/${version}/`), p).toBe(true);
        for (const op of Object.values(item) as Json[]) {
          expect(op.responses["200"].content["application/json"].schema).toBeDefined();
          expect(op["x-kubernetes-group-version-kind"]).toMatchObject({ group, version });
          for (const param of op.parameters ?? []) expect(param).toMatchObject({ name: expect.any(String), in: "query", schema: { type: "string" } });
        }
      }
    }
  });

  it("is structurally valid Swagger 2.0: references resolve and body parameters carry schemas", () => {
    expect(v2).toMatchObject({ swagger: "2.0", info: { title: expect.any(String) } });
    for (const ref of refs(v2)) expect(v2.definitions, ref).toHaveProperty([ref.replace("#/definitions/", "")]);
    for (const item of Object.values(v2.paths) as Json[]) {
      for (const op of Object.values(item) as Json[]) {
        expect(op.responses["200"].schema).toBeDefined();
        for (const param of op.parameters ?? []) expect(param.in === "body" ? param.schema : param.type, JSON.stringify(param)).toBeDefined();
      }
    }
  });

  it("lists the strategic merge patch on each PATCH, which kubectl's client-side apply needs to use these schemas", () => {
    const doc = openApiV3(catalog, "", "v1") as Json;
    const patch = doc.paths["/api/v1/namespaces/{namespace}/serviceaccounts/{name}"].patch;
    expect(Object.keys(patch.requestBody.content)).toContain("application/strategic-merge-patch+json");
    expect(patch.parameters.map((p: Json) => p.name)).toContain("fieldValidation");
  });

  it("indexes one hashed URL per served group/version, the hash changing with the document", () => {
    const apis = publishedApis(catalog);
    const index = JSON.parse(apis.v3Index.json);
    const served = new Set(catalog.definitions.map((d) => indexPath(d.group, d.version)));
    expect(new Set(Object.keys(index.paths))).toEqual(served);
    const hashes = new Set<string>();
    for (const [path, doc] of apis.v3) {
      expect(index.paths[path].serverRelativeURL).toBe(`/openapi/v3/${path}?hash=${doc.hash}`);
      hashes.add(doc.hash);
    }
    expect(hashes.size).toBe(apis.v3.size);
    expect(publishedApis(catalog)).toBe(apis);
  });
});
