// Loading policy files: strict YAML, paths relative to the file, trust files checked, issuer files hot-reloaded.
import { renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { loadPolicyFile, loadPolicySigner, parsePolicyText } from "../../signers/policy.js";
import { HOUR, NOW, rejection, signingRequest, writeCaFiles, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";

const EXAMPLES = resolve(dirname(fileURLToPath(import.meta.url)), "../../signers/examples");
const dir = tempDir("policy-");
let files = 0;

function policyFile(text: string): string {
  const file = join(dir, `policy-${++files}.yaml`);
  writeFileSync(file, text);
  return file;
}

async function code(promise: Promise<unknown>): Promise<string> {
  return (await rejection(promise)).code;
}

describe("policy files", () => {
  it("loads the shipped example policy with its paths relative to the file", async () => {
    const policy = await loadPolicyFile(join(EXAMPLES, "policy.yaml"));
    expect(policy.signerName).toBe("example.com/internal-services");
    expect(policy.issuer).toEqual({ certFile: join(EXAMPLES, "ca.crt"), keyFile: join(EXAMPLES, "ca.key") });
    expect(policy.lifetime).toEqual({ defaultSeconds: 24 * HOUR, minimumSeconds: HOUR, maximumSeconds: 30 * 24 * HOUR });
  });

  it.each([
    ["a YAML syntax error with its line", "signerName: example.com/x\nusages: [a\n", /is not valid YAML: .*line 3/],
    ["a duplicate key", "signerName: example.com/x\nsignerName: example.com/y\n", /is not valid YAML: Map keys must be unique/],
    ["an alias bomb", `a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n`, /cannot be read: .*alias/i],
    ["text above the size limit", `signerName: example.com/x\n#${"x".repeat(1024 * 1024)}\n`, /is larger than 1048576 bytes/],
  ])("refuses %s as POLICY_INVALID", (_, text, message) => {
    expect(() => parsePolicyText(text, { source: "p.yaml" })).toThrow(expect.objectContaining({ code: "POLICY_INVALID", message: expect.stringMatching(message) }));
  });

  it("refuses a policy file that cannot be read", async () => {
    const error = await rejection(loadPolicyFile(join(dir, "missing.yaml")));
    expect([error.code, error.message]).toEqual(["POLICY_INVALID", expect.stringContaining("cannot read policy file")]);
  });

  it("reads trust files, keeping only the CA certificates' PEM blocks", async () => {
    const root = await testCa({ ...SIGNERS_CA, commonName: "published root" });
    writeFileSync(join(dir, "roots.pem"), `Published root\n${root.certPem}trailing text\n`);
    const policy = await loadPolicyFile(policyFile("signerName: example.com/x\ntrust:\n  publish: files\n  files: [roots.pem]\n"));
    expect(policy.trust.pems).toEqual([root.certPem]);
  });

  it.each([
    ["a missing trust file", () => "absent.pem", /expected `trust\.files\[0\]` a PEM file of CA certificates, got .*absent\.pem: cannot be read/],
    ["a trust file without certificates", () => writeTrust("empty.pem", "nothing here\n"), /empty\.pem: no PEM block found/],
    ["a trust file with another PEM label", () => writeTrust("key.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), /expected `trust\.files\[0\]` a PEM file of CA certificates, got .*key\.pem: .*label/],
  ])("refuses %s", async (_, make, message) => {
    const name = make();
    const error = await rejection(loadPolicyFile(policyFile(`signerName: example.com/x\ntrust:\n  publish: files\n  files: [${name}]\n`)));
    expect([error.code, error.causes[0]?.field]).toEqual(["POLICY_INVALID", "trust.files[0]"]);
    expect(error.message).toMatch(message);
  });

  it("refuses a trust file holding a leaf certificate", async () => {
    const { ca } = await testCa(SIGNERS_CA);
    const signer = (await loadPolicySigner(policyFile("signerName: example.com/leafy\n"), { ca })).signer;
    const chain = await signer.sign(await signingRequest({ signerName: "example.com/leafy", cn: "leaf" }), NOW);
    writeTrust("leaf.pem", chain);
    const error = await rejection(loadPolicyFile(policyFile("signerName: example.com/x\ntrust:\n  publish: files\n  files: [leaf.pem]\n")));
    expect(error.message).toMatch(/certificate 1 is not a CA certificate/);
  });
});

function writeTrust(name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return name;
}

describe("policy signers from files", () => {
  it("issues from the issuer files named in the policy", async () => {
    const ca = await testCa({ ...SIGNERS_CA, commonName: "issuer from files" });
    await writeCaFiles(dir, ca, "issuer");
    const loaded = await loadPolicySigner(policyFile("signerName: example.com/files\nissuer: { certFile: issuer.crt, keyFile: issuer.key }\n"), { now: () => NOW });
    expect(loaded.signer.ready()).toBe(true);
    expect(loaded.signer.trustAnchors()).toEqual([ca.certPem]);
    const chain = await loaded.signer.sign(await signingRequest({ signerName: "example.com/files", cn: "a" }), NOW);
    expect(chain).toContain("BEGIN CERTIFICATE");
  });

  it("picks up a rotated CA before signing and keeps publishing the old one while its certificates live", async () => {
    const first = await testCa({ ...SIGNERS_CA, commonName: "rotation one" });
    const second = await testCa({ ...SIGNERS_CA, commonName: "rotation two" });
    await writeCaFiles(dir, first, "rotating");
    const { signer, caSource } = await loadPolicySigner(policyFile("signerName: example.com/rotate\nissuer: { certFile: rotating.crt, keyFile: rotating.key }\n"), { now: () => NOW });
    const request = await signingRequest({ signerName: "example.com/rotate", cn: "a", expirationSeconds: HOUR });
    await signer.sign(request, NOW);

    const staged = await writeCaFiles(dir, second, "staged");
    renameSync(staged.keyFile, join(dir, "rotating.key"));
    renameSync(staged.certFile, join(dir, "rotating.crt"));
    const chain = await signer.sign(request, NOW);

    expect(caSource?.generation).toBe(2);
    expect(new (await import("node:crypto")).X509Certificate(chain).issuer).toContain("rotation two");
    expect(signer.trustAnchors()).toEqual([second.certPem, first.certPem]);
  });

  it.each([
    ["no issuer and no CA", "signerName: example.com/none\n", "POLICY_INVALID"],
    ["issuer files that do not exist", "signerName: example.com/none\nissuer: { certFile: nope.crt, keyFile: nope.key }\n", "CA_INVALID"],
  ])("refuses a policy with %s", async (_, text, expected) => {
    expect(await code(loadPolicySigner(policyFile(text)))).toBe(expected);
  });

  it("reports POLICY_INVALID with the file's path for a bad policy", async () => {
    const file = policyFile("signerName: nope\n");
    const error = await rejection(loadPolicySigner(file));
    expect(isPlatformError(error, "POLICY_INVALID") && error.message.startsWith(`invalid signer policy ${file}: expected \`signerName\``)).toBe(true);
  });
});
