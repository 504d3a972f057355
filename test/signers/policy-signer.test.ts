// Every point of a signer policy, allowed and refused, plus what the issued certificate carries.
import "reflect-metadata";
import { X509Certificate } from "node:crypto";
import * as x509 from "@peculiar/x509";
import { describe, expect, it } from "vitest";
import { readCertificateFacts } from "../../src/pki/ca.js";
import { parsePolicy } from "../../signers/policy-schema.js";
import { createPolicySigner } from "../../signers/policy-signer.js";
import { DAY, expectVerdict, HOUR, intermediateCa, NOW, pemBlocks, rejection, signingRequest, type RequestOptions, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { run } from "../fixtures/process.js";

const NAME = "example.com/policy-test";
const { ca, certPem } = await testCa(SIGNERS_CA);

const signerFor = (sections: Record<string, unknown>, maxDurationSeconds?: number) =>
  createPolicySigner(parsePolicy({ signerName: NAME, ...sections }), { ca, ...(maxDurationSeconds && { maxDurationSeconds }) });

const EXT_OID = "1.3.6.1.4.1.99999.1";
const requestedExtension = (oid = EXT_OID) => new x509.Extension(oid, false, new Uint8Array([0x0c, 0x02, 0x68, 0x69]));
const upnSan = new x509.SubjectAlternativeNameExtension([{ type: "upn", value: "alice@example.com" }]);
const USAGES = ["digital signature", "key encipherment", "client auth"];
const CA_USAGES = ["cert sign", "crl sign", "digital signature"];

type Row = readonly [sentence: string, sections: Record<string, unknown>, request: RequestOptions, expected: true | RegExp];

const subjectRows: Row[] = [
  ["permits a CN matching a glob", { subject: { permitted: { CN: ["*.svc.example.com"] } } }, { cn: "api.svc.example.com" }, true],
  ["refuses a CN the glob does not match", { subject: { permitted: { CN: ["*.svc.example.com"] } } }, { cn: "api.other.example.com" },
    /^subject CN "api\.other\.example\.com" is not permitted by signer example\.com\/policy-test; permitted: \*\.svc\.example\.com$/],
  ["permits an O matching a regular expression", { subject: { permitted: { CN: ["**"], O: ["/team-[a-z]+/"] } } }, { cn: "x", o: ["team-blue"] }, true],
  ["refuses an O the regular expression does not match in full", { subject: { permitted: { CN: ["**"], O: ["/team-[a-z]+/"] } } }, { cn: "x", o: ["team-blue-2"] }, /subject O "team-blue-2" is not permitted/],
  ["permits C, L and ST when listed", { subject: { permitted: { CN: ["**"], C: ["DE", "FR"], L: ["Berlin"], ST: ["*"] } } }, { cn: "x", extraName: "C=DE, L=Berlin, ST=Berlin" }, true],
  ["refuses an attribute the policy does not list", { subject: { permitted: { CN: ["**"] } } }, { cn: "x", ou: ["ops"] }, /subject attribute OU is not permitted by signer .*; permitted: CN/],
  ["permits a subject with its required attribute", { subject: { permitted: { CN: ["**"], O: ["**"] }, required: ["CN"] } }, { cn: "x" }, true],
  ["refuses a subject without a required attribute", { subject: { permitted: { CN: ["**"], O: ["**"] }, required: ["CN"] } }, { o: ["x"] }, /subject attribute CN is required by signer/],
  ["strips a forbidden attribute instead of refusing when told to", { subject: { permitted: { CN: ["**"] }, onForbiddenSubject: "strip" } }, { cn: "x", ou: ["ops"], o: ["y"] }, true],
  ["refuses under strip when a required attribute has no permitted value", { subject: { permitted: { CN: ["a*"] }, required: ["CN"], onForbiddenSubject: "strip" } }, { cn: "bad" },
    /subject attribute CN is required by signer .* \(with a permitted value\)/],
  ["permits any subject when the policy lists no attributes", {}, { cn: "anything", o: ["system:masters"], ou: ["x"] }, true],
];

const sanRows: Row[] = [
  ["permits a DNS name matching a one-label wildcard", { subjectAltNames: { dns: { permitted: ["*.example.com"] } } }, { dns: ["a.example.com"] }, true],
  ["refuses a DNS name two labels below a one-label wildcard", { subjectAltNames: { dns: { permitted: ["*.example.com"] } } }, { dns: ["a.b.example.com"] },
    /^DNS name "a\.b\.example\.com" is not permitted by signer .*; permitted: \*\.example\.com$/],
  ["permits a DNS name any depth below **", { subjectAltNames: { dns: { permitted: ["**.example.com"] } } }, { dns: ["a.b.c.example.com"] }, true],
  ["compares DNS names without regard to case", { subjectAltNames: { dns: { permitted: ["*.example.com"] } } }, { dns: ["API.Example.COM"] }, true],
  ["refuses a DNS name matching a forbidden pattern", { subjectAltNames: { dns: { permitted: ["*.example.com"], forbidden: ["admin.example.com"] } } }, { dns: ["admin.example.com"] },
    /DNS name "admin\.example\.com" is forbidden by signer .* \(forbidden: admin\.example\.com\)/],
  ["refuses a wildcard DNS name by default", { subjectAltNames: { dns: { permitted: ["*.example.com"] } } }, { dns: ["*.example.com"] }, /wildcard DNS name "\*\.example\.com" is not permitted/],
  ["permits a wildcard DNS name when allowed", { subjectAltNames: { dns: { permitted: ["*.example.com"], allowWildcardNames: true } } }, { dns: ["*.example.com"] }, true],
  ["refuses DNS names when the policy has no dns rule", { subjectAltNames: { ip: { permitted: ["10.0.0.0/8"] } } }, { dns: ["a.example.com"] }, /does not permit DNS name subject alternative names, got a\.example\.com/],
  ["permits an IPv4 address inside a CIDR", { subjectAltNames: { ip: { permitted: ["10.0.0.0/8"] } } }, { ip: ["10.20.30.40"] }, true],
  ["refuses an IPv4 address outside the CIDR", { subjectAltNames: { ip: { permitted: ["10.0.0.0/8"] } } }, { ip: ["11.0.0.1"] }, /IP address "11\.0\.0\.1" is not permitted .*; permitted: 10\.0\.0\.0\/8/],
  ["permits an IPv6 address inside a CIDR", { subjectAltNames: { ip: { permitted: ["fd00::/8"] } } }, { ip: ["fd12::1"] }, true],
  ["refuses an IPv6 address outside the CIDR", { subjectAltNames: { ip: { permitted: ["fd00::/8"] } } }, { ip: ["2001:db8::1"] }, /IP address "2001:db8::1" is not permitted/],
  ["refuses an address in a forbidden range", { subjectAltNames: { ip: { permitted: ["10.0.0.0/8"], forbidden: ["10.0.0.1"] } } }, { ip: ["10.0.0.1"] }, /IP address "10\.0\.0\.1" is forbidden/],
  ["permits an email address of a permitted domain", { subjectAltNames: { email: { permitted: ["*@example.com"] } } }, { email: ["first.last@example.com"] }, true],
  ["refuses an email address of another domain", { subjectAltNames: { email: { permitted: ["*@example.com"] } } }, { email: ["a@example.com.evil.org"] }, /email address "a@example\.com\.evil\.org" is not permitted/],
  ["permits a URI matching a pattern", { subjectAltNames: { uri: { permitted: ["spiffe://example.com/ns/*/sa/*"] } } }, { uri: ["spiffe://example.com/ns/prod/sa/api"] }, true],
  ["refuses a URI crossing a path segment the pattern keeps", { subjectAltNames: { uri: { permitted: ["spiffe://example.com/ns/*/sa/*"] } } }, { uri: ["spiffe://example.com/ns/a/b/sa/api"] }, /URI "spiffe:\/\/example\.com\/ns\/a\/b\/sa\/api" is not permitted/],
  ["refuses other names by default", {}, { cn: "x", extensions: [upnSan] }, /does not permit subject alternative names other than DNS, IP, email and URI \(got tags 0\)/],
  ["permits other names when allowed", { subjectAltNames: { otherNames: true } }, { cn: "x", extensions: [upnSan] }, true],
  ["permits a request carrying a required SAN kind", { subjectAltNames: { dns: { permitted: ["**"] }, required: ["dns"] } }, { dns: ["a"] }, true],
  ["refuses a request without a required SAN kind", { subjectAltNames: { dns: { permitted: ["**"] }, ip: { permitted: ["0.0.0.0/0"] }, required: ["dns"] } }, { ip: ["10.0.0.1"] },
    /requires at least one DNS name subject alternative name/],
  ["refuses fewer SANs than minCount", { subjectAltNames: { dns: { permitted: ["**"] }, minCount: 2 } }, { dns: ["a"] }, /requires at least 2 subject alternative names, got 1/],
  ["permits SANs up to maxCount", { subjectAltNames: { dns: { permitted: ["**"] }, maxCount: 2 } }, { dns: ["a", "b"] }, true],
  ["refuses more SANs than maxCount", { subjectAltNames: { dns: { permitted: ["**"] }, maxCount: 2 } }, { dns: ["a", "b", "c"] }, /allows at most 2 subject alternative names, got 3/],
];

const extensionRows: Row[] = [
  ["permits a request carrying a permitted extension", { extensions: { permitted: [EXT_OID] } }, { cn: "x", extensions: [requestedExtension()] }, true],
  ["refuses a request carrying a forbidden extension", { extensions: { forbidden: [EXT_OID] } }, { cn: "x", extensions: [requestedExtension()] }, /requested extension 1\.3\.6\.1\.4\.1\.99999\.1 is forbidden by signer/],
  ["permits a request carrying a required extension", { extensions: { required: [EXT_OID] } }, { cn: "x", extensions: [requestedExtension()] }, true],
  ["refuses a request missing a required extension", { extensions: { required: [EXT_OID] } }, { cn: "x" }, /requires the request to carry extension 1\.3\.6\.1\.4\.1\.99999\.1/],
  ["ignores a requested extension the policy does not mention", {}, { cn: "x", extensions: [requestedExtension("1.3.6.1.4.1.99999.2")] }, true],
];

const usageRows: Row[] = [
  ["permits the required and permitted usages", { usages: { required: ["client auth"], permitted: ["digital signature", "key encipherment"] } }, { cn: "x", usages: USAGES }, true],
  ["refuses a request without a required usage", { usages: { required: ["server auth"] } }, { cn: "x", usages: USAGES }, /usage "server auth" is required by signer .*; requested: digital signature, key encipherment, client auth/],
  ["refuses a usage outside the permitted list", { usages: { required: ["client auth"], permitted: ["digital signature"] } }, { cn: "x", usages: USAGES },
    /usage "key encipherment" is not allowed for signer .*; allowed: client auth, digital signature/],
  ["refuses a forbidden usage", { usages: { forbidden: ["key encipherment"] } }, { cn: "x", usages: USAGES }, /usage "key encipherment" is forbidden by signer/],
  ["refuses a forbidden usage under another name of the same bit", { usages: { forbidden: ["digital signature"] } }, { cn: "x", usages: ["signing", "client auth"] }, /usage "signing" is forbidden/],
  ["permits any known usage when the policy lists none", {}, { cn: "x", usages: ["code signing", "timestamping", "digital signature"] }, true],
];

const lifetimeRows: Row[] = [
  ["permits a request at the minimum lifetime", { lifetime: { minimum: "1h" } }, { cn: "x", expirationSeconds: HOUR }, true],
  ["refuses a request below the minimum lifetime", { lifetime: { minimum: "1h" } }, { cn: "x", expirationSeconds: 1800 },
    /requested lifetime 30m \(expirationSeconds 1800\) is below the minimum 1h of signer/],
  ["permits a request above the maximum (it is shortened)", { lifetime: { maximum: "2h" } }, { cn: "x", expirationSeconds: DAY }, true],
];

const caRows: Row[] = [
  ["refuses a CA request when CA certificates are not allowed", {}, { cn: "sub CA", requestCa: true, usages: CA_USAGES }, /does not issue CA certificates; remove BasicConstraints CA=true/],
  ["permits a CA request when CA certificates are allowed", { caCertificates: { allowCa: true } }, { cn: "sub CA", requestCa: true, usages: CA_USAGES }, true],
  ["refuses a CA request without cert sign", { caCertificates: { allowCa: true } }, { cn: "sub CA", requestCa: true, usages: ["digital signature"] }, /a CA certificate needs usage "cert sign"/],
  ["refuses cert sign on a leaf request", { caCertificates: { allowCa: true } }, { cn: "leaf", usages: CA_USAGES }, /usage "cert sign" needs a CA certificate/],
  ["refuses cert sign when CA certificates are not allowed", {}, { cn: "leaf", usages: CA_USAGES }, /usage "cert sign" is only for CA certificates/],
  ["refuses a path length above maxPathLen", { caCertificates: { allowCa: true, maxPathLen: 1 } },
    { cn: "sub CA", usages: CA_USAGES, extensions: [new x509.BasicConstraintsExtension(true, 2, true)] }, /requested path length 2 is above the maximum 1/],
  ["permits a path length within maxPathLen", { caCertificates: { allowCa: true, maxPathLen: 1 } },
    { cn: "sub CA", usages: CA_USAGES, extensions: [new x509.BasicConstraintsExtension(true, 0, true)] }, true],
];

describe("policy signer rules", () => {
  describe.each([
    ["permitted subjects", subjectRows],
    ["subject alternative names", sanRows],
    ["requested extensions", extensionRows],
    ["usages", usageRows],
    ["lifetime", lifetimeRows],
    ["CA certificates", caRows],
  ] as const)("%s", (_, rows) => {
    it.each(rows)("%s", (_, sections, request, expected) => expectVerdict(signerFor(sections), { usages: ["digital signature"], ...request }, expected));
  });
});

async function issue(sections: Record<string, unknown>, request: RequestOptions, maxDurationSeconds?: number) {
  const signer = signerFor(sections, maxDurationSeconds);
  const chain = await signer.sign(await signingRequest({ signerName: NAME, usages: USAGES, ...request }), NOW);
  const leaf = pemBlocks(chain)[0]!;
  return { chain, leaf, facts: readCertificateFacts(new Uint8Array(new X509Certificate(leaf).raw)), cert: new x509.X509Certificate(leaf) };
}

const hours = (facts: { notBefore: Date; notAfter: Date }) => (facts.notAfter.getTime() - NOW.getTime()) / 3_600_000;

describe("policy signer issuance", () => {
  it.each([
    ["uses the default lifetime when the request names none", { lifetime: { default: "24h", maximum: "48h" } }, undefined, undefined, 24 - 5 / 60],
    ["shortens a request to the policy maximum", { lifetime: { default: "1h", maximum: "2h" } }, DAY, undefined, 2],
    ["honours a request between minimum and maximum", { lifetime: { minimum: "1h", maximum: "30d" } }, 3 * HOUR, undefined, 3],
    ["uses the policy maximum when there is no default", { lifetime: { maximum: "12h" } }, undefined, undefined, 12 - 5 / 60],
    ["lets the cluster maximum win over a longer policy maximum", { lifetime: { default: "30d", maximum: "90d" } }, undefined, 4 * HOUR, 4],
  ] as const)("%s", async (_, sections, expirationSeconds, clusterMax, expectedHours) => {
    const { facts } = await issue(sections, { cn: "x", ...(expirationSeconds && { expirationSeconds }) }, clusterMax);
    expect(hours(facts)).toBeCloseTo(expectedHours, 6);
  });

  it("copies a permitted requested extension and drops one it does not mention", async () => {
    const { cert } = await issue({ extensions: { permitted: [EXT_OID] } }, { cn: "x", extensions: [requestedExtension(), requestedExtension("1.3.6.1.4.1.99999.2")] });
    const oids = cert.extensions.map((e) => e.type);
    expect(oids).toContain(EXT_OID);
    expect(oids).not.toContain("1.3.6.1.4.1.99999.2");
  });

  it("strips forbidden subject attributes and keeps the permitted ones byte for byte", async () => {
    const { leaf } = await issue({ subject: { permitted: { CN: ["**"], O: ["keep-*"] }, onForbiddenSubject: "strip" } }, { cn: "svc", o: ["keep-me", "drop-me"], ou: ["ops"] });
    const subject = run("openssl", ["x509", "-noout", "-subject", "-nameopt", "RFC2253"], leaf).trim();
    // RFC 2253 prints the last RDN first: the request order CN, OU, O, O leaves CN then O.
    expect(subject).toBe("subject=O=keep-me,CN=svc");
  });

  it("issues a CA certificate with the policy's path length that can itself issue", async () => {
    const { cert, leaf } = await issue({ caCertificates: { allowCa: true, maxPathLen: 0 } }, { cn: "sub CA", requestCa: true, usages: CA_USAGES });
    const basic = cert.getExtension(x509.BasicConstraintsExtension);
    expect([basic?.ca, basic?.pathLength]).toEqual([true, 0]);
    expect(new X509Certificate(leaf).checkIssued(new X509Certificate(certPem))).toBe(true);
  });

  it.each([
    ["ca", 1],
    ["ca-and-intermediates", 2],
  ] as const)("publishes %s as trust anchors", async (publish, count) => {
    const inter = await intermediateCa();
    const signer = createPolicySigner(parsePolicy({ signerName: NAME, trust: { publish } }), { ca: inter.ca });
    const anchors = signer.trustAnchors();
    expect(anchors).toHaveLength(count);
    expect(anchors[0]).toBe(inter.ca.certPem);
    if (count === 2) expect(anchors[1]).toBe(inter.root.certPem);
  });

  it("refuses to build a signer whose trust files were never read", async () => {
    const policy = parsePolicy({ signerName: NAME, trust: { publish: "files", files: ["/nowhere/root.pem"] } });
    expect(() => createPolicySigner(policy, { ca })).toThrow(expect.objectContaining({ code: "POLICY_INVALID" }));
  });

  it("refuses in sign what the policy refuses, naming the rule", async () => {
    const signer = signerFor({ usages: { required: ["server auth"] } });
    const error = await rejection(signer.sign(await signingRequest({ signerName: NAME, cn: "x", usages: USAGES }), NOW));
    expect([error.code, error.message]).toEqual(["SIGNER_REJECTED", expect.stringContaining('usage "server auth" is required')]);
  });
});
