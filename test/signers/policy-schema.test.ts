// Validation of policy documents: every malformed field is named with its path, all at once.
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { parsePolicy } from "../../signers/policy-schema.js";

const NAME = "example.com/schema-test";

function problems(document: unknown): { message: string; fields: (string | undefined)[] } {
  try {
    parsePolicy(document);
  } catch (error) {
    if (!isPlatformError(error, "POLICY_INVALID")) throw error;
    return { message: error.message, fields: error.causes.map((c) => c.field) };
  }
  throw new Error("the policy was accepted");
}

describe("signer policy schema", () => {
  it.each([
    ["requires a signer name", { signerName: undefined }, "signerName", /expected `signerName` to be set, got nothing/],
    ["requires a signer name written without a value", { signerName: null }, "signerName", /expected `signerName` to be set, got nothing/],
    ["refuses a signer name without a path", { signerName: "example.com" }, "signerName", /form domain\/path/],
    ["refuses a signer name whose domain has one label", { signerName: "local/x" }, "signerName", /at least two segments/],
    ["refuses an unknown top-level field", { subjct: {} }, "subjct", /unknown field `subjct`; known fields: signerName, issuer/],
    ["refuses an issuer without its key file", { issuer: { certFile: "ca.crt" } }, "issuer.keyFile", /expected `issuer\.keyFile` to be set, got nothing/],
    ["refuses an unknown trust publication", { trust: { publish: "everything" } }, "trust.publish", /expected `trust\.publish` one of ca, ca-and-intermediates, files, got "everything"/],
    ["refuses publishing files without listing any", { trust: { publish: "files" } }, "trust.files", /expected `trust\.files` to list at least one PEM file/],
    ["refuses trust files that would not be read", { trust: { publish: "ca", files: ["a.pem"] } }, "trust.files", /expected `trust\.files` to be set only when trust\.publish is files/],
    ["refuses an unknown subject attribute", { subject: { permitted: { XYZ: ["a"] } } }, "subject.permitted.XYZ", /expected `subject\.permitted\.XYZ` a subject attribute \(CN, SN, .* or a dotted OID\) as its key, got "XYZ"/],
    ["refuses a broken regular expression", { subject: { permitted: { CN: ["/a(/"] } } }, "subject.permitted.CN", /invalid regular expression \/a\(\//],
    ["refuses patterns that are not a list", { subject: { permitted: { CN: "a" } } }, "subject.permitted.CN", /expected `subject\.permitted\.CN` a list, got "a"/],
    ["refuses a required attribute the policy does not permit", { subject: { permitted: { CN: ["*"] }, required: ["O"] } }, "subject.required[0]", /expected `subject\.required\[0\]` an attribute listed in subject\.permitted, got "O"/],
    ["refuses strip without permitted attributes", { subject: { onForbiddenSubject: "strip" } }, "subject.onForbiddenSubject", /expected `subject\.onForbiddenSubject` deny when subject\.permitted is not set \(strip needs it/],
    ["refuses an unknown forbidden-subject action", { subject: { onForbiddenSubject: "ignore" } }, "subject.onForbiddenSubject", /expected `subject\.onForbiddenSubject` one of deny, strip/],
    ["refuses a SAN kind without permitted patterns", { subjectAltNames: { dns: { forbidden: ["a"] } } }, "subjectAltNames.dns.permitted", /expected `subjectAltNames\.dns\.permitted` to be set; use \["\*\*"\] to permit any/],
    ["refuses a malformed CIDR", { subjectAltNames: { ip: { permitted: ["10.0.0.0/33"] } } }, "subjectAltNames.ip.permitted", /"10\.0\.0\.0\/33" is not an IPv4 or IPv6 address or CIDR range/],
    ["refuses an unknown SAN kind field", { subjectAltNames: { dns: { permitted: ["*"], wildcard: true } } }, "subjectAltNames.dns.wildcard", /unknown field/],
    ["refuses a required SAN kind without rule", { subjectAltNames: { required: ["uri"] } }, "subjectAltNames.required[0]", /expected `subjectAltNames\.required\[0\]` a kind subjectAltNames permits \(subjectAltNames\.uri does not permit any uri names\)/],
    ["refuses maxCount below minCount", { subjectAltNames: { dns: { permitted: ["*"] }, minCount: 3, maxCount: 2 } }, "subjectAltNames.maxCount", /expected `subjectAltNames\.maxCount` at least minCount and the number of required kinds, got 2/],
    ["refuses a negative minCount", { subjectAltNames: { minCount: -1 } }, "subjectAltNames.minCount", /expected `subjectAltNames\.minCount` a whole number ≥ 0, got -1/],
    ["refuses an extension that is not an OID", { extensions: { permitted: ["must-staple"] } }, "extensions.permitted[0]", /expected `extensions\.permitted\[0\]` a dotted object identifier .*, got "must-staple"/],
    ["refuses an extension another policy point governs", { extensions: { forbidden: ["2.5.29.17"] } }, "extensions.forbidden[0]", /expected `extensions\.forbidden\[0\]` an extension not governed by another policy point \(this one is governed by subjectAltNames\)/],
    ["refuses an extension both permitted and forbidden", { extensions: { permitted: ["1.2.3.4"], forbidden: ["1.2.3.4"] } }, "extensions.forbidden", /expected `extensions\.forbidden` extensions that are not also required or permitted, got "1\.2\.3\.4"/],
    ["refuses an unknown usage", { usages: { required: ["world domination"] } }, "usages.required[0]", /expected `usages\.required\[0\]` a known usage \(signing, digital signature, .*\), got "world domination"/],
    ["refuses a forbidden usage that another name requires", { usages: { required: ["signing"], forbidden: ["digital signature"] } }, "usages.forbidden", /expected `usages\.forbidden` usages that do not contradict required or permitted "signing", got "digital signature"/],
    ["refuses a lifetime in another syntax", { lifetime: { maximum: "1 week" } }, "lifetime.maximum", /expected `lifetime\.maximum` a duration such as "30s", "1h30m", .*"90d" or whole seconds, got "1 week"/],
    ["refuses a lifetime below 10 minutes", { lifetime: { minimum: "5m" } }, "lifetime.minimum", /expected `lifetime\.minimum` a duration of at least 10m, got "5m"/],
    ["refuses a minimum above the maximum", { lifetime: { minimum: "2d", maximum: "1d" } }, "lifetime.minimum", /expected `lifetime\.minimum` at most lifetime\.maximum \(1d\), got "2d"/],
    ["refuses a default above the maximum", { lifetime: { default: "30d", maximum: "7d" } }, "lifetime.default", /expected `lifetime\.default` at most lifetime\.maximum \(7d\), got "30d"/],
    ["refuses a default below the minimum", { lifetime: { default: "1h", minimum: "2h" } }, "lifetime.default", /expected `lifetime\.default` at least lifetime\.minimum \(2h\), got "1h"/],
    ["refuses maxPathLen when CA certificates are not allowed", { caCertificates: { maxPathLen: 1 } }, "caCertificates.maxPathLen", /expected `caCertificates\.maxPathLen` to be set only when allowCa is true/],
    ["refuses allowCa that is not a boolean", { caCertificates: { allowCa: "yes" } }, "caCertificates.allowCa", /expected `caCertificates\.allowCa` true or false, got "yes"/],
  ])("%s", (_, sections, field, message) => {
    const result = problems({ signerName: NAME, ...sections });
    expect(result.fields).toContain(field);
    expect(result.message).toMatch(message);
  });

  it.each([
    ["nothing", undefined],
    ["a list", [1, 2]],
    ["a string", "signerName: x"],
  ])("refuses a document that is %s", (_, document) => {
    expect(problems(document).fields.length).toBeGreaterThan(0);
  });

  it("reports every problem of a document at once", () => {
    const result = problems({ signerName: "bad", usages: { required: ["nope"] }, lifetime: { default: "soon" } });
    expect(result.fields).toEqual(["signerName", "usages.required[0]", "lifetime.default"]);
    expect(result.message).toMatch(/^invalid signer policy: 3 problems: expected `signerName` .*; expected `usages\.required\[0\]` .*; expected `lifetime\.default` /);
  });

  it("compiles a complete policy with its defaults", () => {
    const policy = parsePolicy({
      signerName: NAME,
      issuer: { certFile: "ca.crt", keyFile: "/etc/ca/ca.key" },
      subject: { permitted: { cn: ["*"], "2.5.4.97": ["x"] }, required: ["CN"] },
      subjectAltNames: { dns: { permitted: ["**"] } },
      lifetime: { default: 86_400, minimum: "600", maximum: "1d1h" },
    }, { baseDir: "/srv/policies" });
    expect(policy.issuer).toEqual({ certFile: "/srv/policies/ca.crt", keyFile: "/etc/ca/ca.key" });
    expect([...policy.subject.permitted!.keys()]).toEqual(["2.5.4.3", "2.5.4.97"]);
    expect(policy.subject.onForbiddenSubject).toBe("deny");
    expect(policy.trust).toEqual({ publish: "ca", files: [] });
    expect(policy.lifetime).toEqual({ defaultSeconds: 86_400, minimumSeconds: 600, maximumSeconds: 90_000 });
    expect(policy.caCertificates).toEqual({ allowCa: false });
    expect(policy.subjectAltNames.dns?.allowWildcardNames).toBe(false);
    expect([policy.subjectAltNames.ip, policy.subjectAltNames.otherNames, policy.subjectAltNames.minCount]).toEqual([undefined, false, 0]);
  });
});
