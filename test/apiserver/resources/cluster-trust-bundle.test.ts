import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { groupNames } from "../../../src/api/group.js";
import { certtoolCa, definition, object, pki, runCreate, runUpdate, stored, summary, withHeaders } from "./fixtures.js";

const def = definition("ClusterTrustBundle");

function bundle(o: { name?: string; signerName?: string; trustBundle?: string } = {}): ApiObject {
  const spec: Record<string, unknown> = { trustBundle: o.trustBundle ?? pki().caPem };
  if (o.signerName !== undefined) spec.signerName = o.signerName;
  return object(def, { spec }, { name: o.name ?? (o.signerName ? `${o.signerName.replaceAll("/", ":")}:one` : "bundle-1") });
}

const createErrors = (o: Parameters<typeof bundle>[0]) => summary(runCreate(def, bundle(o)).errors);

describe("ClusterTrustBundle definition", () => {
  it("is cluster-scoped in certificates v1beta1 with a signerName field selector and column", () => {
    expect(def).toMatchObject({ group: "certificates.platform.io", version: "v1beta1", plural: "clustertrustbundles", namespaced: false });
    const obj = bundle({ signerName: "example.com/foo" });
    expect(def.fieldSelectors?.["spec.signerName"]?.(obj)).toBe("example.com/foo");
    expect(def.columns?.map((c) => c.name)).toEqual(["Name", "SignerName"]);
    expect(def.row?.(obj, new Date())).toEqual(["example.com:foo:one", "example.com/foo"]);
    expect(def.row?.(bundle(), new Date())).toEqual(["bundle-1", "<none>"]);
  });

  it("takes its group from the suffix", () => {
    expect(definition("ClusterTrustBundle", groupNames("k8s.io")).group).toBe("certificates.k8s.io");
  });
});

describe("ClusterTrustBundle names", () => {
  it.each([
    ["a signer bundle with the signer prefix", "example.com/foo", "example.com:foo:abc"],
    ["a signer bundle whose path has dots", "example.com/ns.name", "example.com:ns.name:v1.2"],
    ["a bundle without signer and a plain name", undefined, "my-anchors"],
    ["a bundle with an empty signer and a dotted name", "", "anchors.example.com"],
  ])("accepts %s", (_, signerName, name) => {
    expect(createErrors({ signerName, name })).toEqual([]);
  });

  it.each([
    ["a signer bundle without the prefix", "example.com/foo", "abc"],
    ["a signer bundle with another signer's prefix", "example.com/foo", "example.com:bar:abc"],
    ["a signer bundle with nothing after the prefix", "example.com/foo", "example.com:foo:"],
    ["a signer bundle with an upper-case suffix", "example.com/foo", "example.com:foo:ABC"],
    ["a bundle without signer that looks like a signer bundle", undefined, "example.com:foo:abc"],
    ["a bundle without signer with any colon", "", "a:b"],
    ["a bundle without signer and an upper-case name", undefined, "Anchors"],
  ])("refuses %s", (_, signerName, name) => {
    expect(createErrors({ signerName, name })).toEqual(["metadata.name FieldValueInvalid"]);
  });

  it.each(["example.com", "com/foo", "example.com/a/b"])("refuses the signer name %s", (signerName) => {
    expect(createErrors({ signerName, name: "plain" })).toContain("spec.signerName FieldValueInvalid");
  });
});

describe("ClusterTrustBundle spec.trustBundle", () => {
  it.each([
    ["one CA made by openssl", () => pki().caPem],
    ["a CA made by GnuTLS certtool", certtoolCa],
    ["two CAs", () => pki().caPem + pki().otherCaPem],
    ["CAs with text between blocks", () => `first\n${pki().caPem}second\n${pki().otherCaPem}`],
  ])("accepts %s", (_, trustBundle) => {
    expect(createErrors({ trustBundle: trustBundle() })).toEqual([]);
  });

  it.each([
    ["an empty bundle", () => "", "spec.trustBundle FieldValueRequired"],
    ["text without blocks", () => "no anchors", "spec.trustBundle FieldValueInvalid"],
    ["a certificate that is not a CA", () => pki().leafPem, "spec.trustBundle FieldValueInvalid"],
    ["the same CA twice", () => pki().caPem + pki().caPem, "spec.trustBundle FieldValueDuplicate"],
    ["a CA with PEM headers", () => withHeaders(pki().caPem), "spec.trustBundle FieldValueInvalid"],
    ["a CERTIFICATE REQUEST block", () => pki().csrPem, "spec.trustBundle FieldValueInvalid"],
  ])("refuses %s", (_, trustBundle, expected) => {
    expect(createErrors({ trustBundle: trustBundle() })).toContain(expected);
  });

  it("refuses a bundle that is not a string", () => {
    const obj = bundle();
    (obj.spec as Record<string, unknown>).trustBundle = ["pem"];
    expect(summary(runCreate(def, obj).errors)).toEqual(["spec.trustBundle FieldValueTypeInvalid"]);
  });

  it("refuses an object without a spec", () => {
    const obj = bundle();
    delete obj.spec;
    expect(summary(runCreate(def, obj).errors)).toEqual(["spec FieldValueRequired"]);
  });
});

describe("ClusterTrustBundle update", () => {
  it("accepts new anchors and counts them for the generation", () => {
    const previous = stored(def, bundle({ signerName: "example.com/foo" }));
    const next = structuredClone(previous);
    (next.spec as Record<string, unknown>).trustBundle = pki().otherCaPem;
    expect(runUpdate(def, next, previous).errors).toEqual([]);
    expect(def.strategy.specChanged?.(next, previous)).toBe(true);
  });

  it.each([
    ["a changed signer", "example.com/bar"],
    ["a removed signer", undefined],
  ])("refuses %s as immutable", (_, signerName) => {
    const previous = stored(def, bundle({ signerName: "example.com/foo", name: "example.com:foo:x" }));
    const next = structuredClone(previous);
    const spec = next.spec as Record<string, unknown>;
    if (signerName === undefined) delete spec.signerName;
    else spec.signerName = signerName;
    const errors = runUpdate(def, next, previous).errors;
    expect(summary(errors)).toContain("spec.signerName FieldValueInvalid");
    expect(errors.some((e) => e.message.includes("field is immutable"))).toBe(true);
  });
});
