import { describe, expect, it } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { ApiCatalog, compareVersions } from "../../src/apiserver/discovery.js";
import { route } from "../../src/apiserver/http/routes.js";
import { allResources } from "../../src/apiserver/registry/resources/index.js";

function catalog(suffix = "platform.io") {
  const names = groupNames(suffix);
  return { names, catalog: new ApiCatalog(allResources(names), names) };
}

describe("discovery documents", () => {
  it("lists every group once with its preferred version first", () => {
    const { names, catalog: c } = catalog();
    const groups = c.apiGroupList().groups;
    expect(new Set(groups.map((g) => g.name)).size).toBe(groups.length);
    const certs = groups.find((g) => g.name === names.certificates)!;
    expect(certs.versions.map((v) => v.version)).toEqual(["v1", "v1beta1"]);
    expect(certs.preferredVersion).toEqual({ groupVersion: `${names.certificates}/v1`, version: "v1" });
    expect(groups.some((g) => g.name === "")).toBe(false);
  });

  it("describes CSRs with the short name, the subresources and the verbs kubectl needs", () => {
    const { names, catalog: c } = catalog();
    const list = c.resourceList(names.certificates, "v1");
    expect(list).toMatchObject({ kind: "APIResourceList", groupVersion: `${names.certificates}/v1` });
    const csr = list.resources.find((r) => r.name === "certificatesigningrequests")!;
    expect(csr).toMatchObject({ singularName: "certificatesigningrequest", namespaced: false, kind: "CertificateSigningRequest", shortNames: ["csr"] });
    expect(csr.verbs).toEqual(expect.arrayContaining(["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]));
    const subs = list.resources.filter((r) => r.name.startsWith("certificatesigningrequests/")).map((r) => r.name).sort();
    expect(subs).toEqual(["certificatesigningrequests/approval", "certificatesigningrequests/revocation", "certificatesigningrequests/status"]);
  });

  it("offers the token action of service accounts as a TokenRequest create", () => {
    const { names, catalog: c } = catalog();
    const token = c.resourceList("", "v1").resources.find((r) => r.name === "serviceaccounts/token");
    expect(token).toMatchObject({ kind: "TokenRequest", verbs: ["create"], group: names.authentication, version: "v1" });
  });

  it("serves create-only kinds with the create verb only", () => {
    const { names, catalog: c } = catalog();
    const review = c.resourceList(names.authentication, "v1").resources.find((r) => r.name === "tokenreviews");
    expect(review?.verbs).toEqual(["create"]);
  });

  it("follows the group suffix", () => {
    const { catalog: c } = catalog("k8s.io");
    expect(c.apiGroupList().groups.map((g) => g.name)).toContain("certificates.k8s.io");
    expect(c.hasGroup("certificates.platform.io")).toBe(false);
  });

  it("reports a version kubectl accepts", () => {
    const v = catalog().catalog.version();
    expect(v.gitVersion).toMatch(/^v1\.\d+\.\d+-platform-ca$/);
    expect(v.major).toBe("1");
  });

  it.each([
    [["v1beta1", "v1", "v2", "v1alpha1", "v2beta2", "v2beta1"], ["v2", "v1", "v2beta2", "v2beta1", "v1beta1", "v1alpha1"]],
  ])("orders versions GA, beta, alpha with higher numbers first", (input, expected) => {
    expect([...input].sort(compareVersions)).toEqual(expected);
  });
});

describe("routing", () => {
  const { names, catalog: c } = catalog();
  it.each([
    ["/api", { type: "apiVersions" }],
    ["/apis", { type: "apiGroupList" }],
    [`/apis/${names.certificates}`, { type: "apiGroup", group: names.certificates }],
    [`/apis/${names.certificates}/v1beta1`, { type: "resourceList", version: "v1beta1" }],
    ["/version", { type: "version" }],
    ["/readyz", { type: "health", check: "readyz" }],
    ["/openapi/v2", { type: "openapiV2" }],
    ["/openapi/v3", { type: "openapiIndex" }],
    [`/openapi/v3/apis/${names.certificates}/v1beta1`, { type: "openapi", group: names.certificates, version: "v1beta1" }],
    ["/api/v1/serviceaccounts", { type: "resource", def: { plural: "serviceaccounts" } }],
    ["/api/v1/namespaces/default/serviceaccounts/sa-1", { type: "resource", namespace: "default", name: "sa-1" }],
    ["/api/v1/namespaces/default/serviceaccounts/sa-1/token", { type: "resource", name: "sa-1", subresource: "token" }],
    ["/api/v1/namespaces/kube", { type: "resource", name: "kube" }],
    ["/api/v1/namespaces/kube/status", { type: "resource", name: "kube", subresource: "status" }],
    [`/apis/${names.certificates}/v1/certificatesigningrequests/a%3Ab/approval`, { type: "resource", name: "a:b", subresource: "approval" }],
  ])("routes %s", (path, expected) => {
    expect(route(path, c)).toMatchObject(expected);
  });

  it.each([
    ["/apis/unknown.example.com/v1"],
    [`/apis/${names.certificates}/v9/certificatesigningrequests`],
    ["/api/v1/serviceaccounts/sa-1"],
    ["/api/v2"],
    ["/api/v1/nothings"],
    ["/openapi/v2/more"],
    ["/openapi/v3/apis/unknown.example.com/v1"],
    ["/api/v1/namespaces/default/serviceaccounts/a/b/c"],
    ["/api/v1/namespaces/%E0%A4%A/serviceaccounts"],
  ])("serves nothing at %s", (path) => {
    expect(route(path, c)).toBeUndefined();
  });
});
