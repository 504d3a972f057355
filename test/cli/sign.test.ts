import { X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { generateCa } from "../../src/pki/ca.js";
import { writePrivateKeyFile } from "../../src/pki/keys.js";
import { csr, type CsrOptions } from "../fixtures/csr.js";
import { REPO, opensslVerifies, runCli, tool, x509Text } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir();
const CA_CERT = join(dir, "ca.crt");
const CA_KEY = join(dir, "ca.key");
const SIGNERS = groupNames().signers;
const CLIENT_USAGES = "digital signature,client auth";

/** Writes a CSR built from `o` and returns its path. */
async function csrFile(name: string, o: CsrOptions): Promise<string> {
  const path = join(dir, `${name}.csr`);
  writeFileSync(path, (await csr(o)).pem);
  return path;
}

/** `platform-ca sign` with the test CA and the given flags (CA flags first, overridable by later ones). */
function sign(flags: readonly string[], stdin?: string) {
  return runCli(["sign", "--ca-cert", CA_CERT, "--ca-key", CA_KEY, ...flags], stdin === undefined ? {} : { stdin });
}

function lifetimeSeconds(pem: string): number {
  const cert = new X509Certificate(pem);
  return (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 1000;
}

beforeAll(async () => {
  const made = await generateCa({ commonName: "sign test CA", keyType: "p256", lifetimeSeconds: 3650 * 86400, now: new Date() });
  writeFileSync(CA_CERT, made.certPem);
  await writePrivateKeyFile(CA_KEY, made.keyPem);
});

describe("platform-ca sign", () => {
  it("signs an openssl CSR with the built-in API-server client signer; openssl verifies the result", async () => {
    const keyFile = join(dir, "alice.key");
    const csrPath = join(dir, "alice-openssl.csr");
    const gen = await tool("openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", keyFile, "-subj", "/O=dev/CN=alice", "-out", csrPath]);
    expect(gen.code).toBe(0);
    const r = await sign(["--signer-name", SIGNERS.apiserverClient, "--usages", CLIENT_USAGES, "--csr", csrPath]);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    const out = join(dir, "alice.pem");
    writeFileSync(out, r.stdout);
    expect(await opensslVerifies(CA_CERT, out, "sslclient")).toBe(true);
    expect(await x509Text(out)).toMatch(/Subject: O\s?=\s?dev, CN\s?=\s?alice/);
    expect((await tool("openssl", ["x509", "-noout", "-checkend", "0", "-in", out])).code).toBe(0);
  });

  it("signs many CSRs into --out-dir, each the certificate a single sign gives (openssl verifies them)", async () => {
    const names = ["n1", "n2", "n3", "n4", "n5", "n6"];
    const paths = await Promise.all(names.map((n) => csrFile(`many-${n}`, { cn: `system:node:${n}`, o: ["system:nodes"], freshKey: true })));
    const outDir = join(dir, "many");
    const flags = ["--signer-name", SIGNERS.nodeagentClient, "--usages", CLIENT_USAGES];
    const r = await sign([...flags, ...paths.flatMap((p) => ["--csr", p]), "--out-dir", outDir]);
    expect([r.code, r.stderr, r.stdout]).toEqual([0, "", ""]);
    // What differs per issuance (serial, validity instants, signature) aside, the content is the single-file one's.
    const content = async (path: string) =>
      (await x509Text(path)).replace(/Serial Number:\n?.*\n/, "").replace(/Not (Before|After) *:.*\n/g, "").replace(/Signature Value:[\s\S]*$/, "");
    for (const [i, name] of names.entries()) {
      const out = join(outDir, `many-${name}.crt`);
      expect(await opensslVerifies(CA_CERT, out, "sslclient")).toBe(true);
      const single = await sign([...flags, "--csr", paths[i]!]);
      writeFileSync(join(dir, `single-${name}.pem`), single.stdout);
      expect(await content(out)).toBe(await content(join(dir, `single-${name}.pem`)));
      expect(await content(out)).toMatch(new RegExp(`Subject: CN\\s?=\\s?system:node:${name},`));
    }
  });

  it("signs the good CSRs of many, names each refused one on its own line and exits 1", async () => {
    const good = await csrFile("mixed-good", { cn: "system:node:good", o: ["system:nodes"] });
    const bad = await csrFile("mixed-bad", { cn: "web" });
    const outDir = join(dir, "mixed");
    const r = await sign(["--signer-name", SIGNERS.nodeagentClient, "--usages", CLIENT_USAGES, "--csr", good, "--csr", bad, "--out-dir", outDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: ${bad}: .*system:nodes.*\nerror: 1 of 2 CSRs were not signed\n$`));
    expect(await opensslVerifies(CA_CERT, join(outDir, "mixed-good.crt"), "sslclient")).toBe(true);
  });

  it("refuses several --csr without --out-dir as a usage error", async () => {
    const path = await csrFile("twice", { cn: "x" });
    const r = await sign(["--signer-name", SIGNERS.apiserverClient, "--usages", CLIENT_USAGES, "--csr", path, "--csr", path]);
    expect([r.code, r.stdout, r.stderr]).toEqual([2, "", "error: several --csr files need --out-dir (one certificate file per CSR)\n"]);
  });

  it("reads the CSR from stdin with --csr -", async () => {
    const r = await sign(["--signer-name", SIGNERS.apiserverClient, "--usages", CLIENT_USAGES, "--csr", "-"], (await csr({ cn: "bob" })).pem);
    expect(r.code).toBe(0);
    expect(new X509Certificate(r.stdout).subject).toBe("CN=bob");
  });

  it.each<[string, string[], number]>([
    ["--expiration-seconds below the maximum", ["--expiration-seconds", "3600"], 3600],
    ["--max-duration below the requested lifetime", ["--expiration-seconds", "86400", "--max-duration", "2h"], 7200],
    ["no request: the one-year default maximum, reported as requested", [], 8760 * 3600],
  ])("honours %s", async (_, flags, seconds) => {
    const r = await sign(["--signer-name", SIGNERS.apiserverClient, "--usages", CLIENT_USAGES, "--csr", await csrFile("life", { cn: "carol" }), ...flags]);
    expect(r.code).toBe(0);
    // Short certificates keep the 5-minute backdate as extra validity; long ones end 5 minutes early.
    expect(lifetimeSeconds(r.stdout)).toBe(seconds < 8 * 3600 ? seconds + 300 : seconds);
  });

  it.each<[string, CsrOptions, string, string, RegExp]>([
    ["a server usage from the client signer", { cn: "web" }, SIGNERS.apiserverClient, "digital signature,server auth", /usage "server auth" is not allowed/],
    ["organization system:masters", { cn: "root", o: ["system:masters"] }, SIGNERS.apiserverClient, CLIENT_USAGES, /system:masters/],
    ["a node client CSR with a DNS name", { cn: "system:node:n1", o: ["system:nodes"], dns: ["n1"] }, SIGNERS.nodeagentClient, CLIENT_USAGES, /subject alternative name|SAN/i],
    ["a serving CSR with no node subject", { cn: "web", dns: ["web"] }, SIGNERS.nodeagentServing, "digital signature,server auth", /system:node/],
  ])("refuses %s: exit 1, one line on stderr, nothing on stdout", async (_, o, signerName, usages, reason) => {
    const r = await sign(["--signer-name", signerName, "--usages", usages, "--csr", await csrFile("refused", o)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: /);
    expect(r.stderr).toMatch(reason);
  });

  it("signs a node-agent client CSR with the node-agent client signer", async () => {
    const path = await csrFile("node", { cn: "system:node:n1", o: ["system:nodes"] });
    const r = await sign(["--signer-name", SIGNERS.nodeagentClient, "--usages", CLIENT_USAGES, "--csr", path]);
    expect(r.code).toBe(0);
    expect(new X509Certificate(r.stdout).subject).toBe("CN=system:node:n1\nO=system:nodes");
  });

  it("derives built-in signer names from --group-suffix", async () => {
    const path = await csrFile("suffix", { cn: "dave" });
    const ok = await sign(["--group-suffix", "k8s.io", "--signer-name", "kubernetes.io/kube-apiserver-client", "--usages", CLIENT_USAGES, "--csr", path]);
    expect(ok.code).toBe(0);
    const wrong = await sign(["--group-suffix", "k8s.io", "--signer-name", SIGNERS.apiserverClient, "--usages", CLIENT_USAGES, "--csr", path]);
    expect(wrong.code).toBe(2);
  });

  it.each<[string, string[], RegExp]>([
    ["a missing --ca-key", ["sign", "--ca-cert", "x", "--signer-name", "platform.io/apiserver-client", "--usages", "client auth", "--csr", "x"], /--ca-key/],
    ["a missing --usages", ["sign", "--ca-cert", "x", "--ca-key", "x", "--signer-name", "platform.io/apiserver-client", "--csr", "x"], /--usages/],
    ["an unknown usage", ["--usages", "client-auth"], /--usages/],
    ["an unknown signer without --policy or --plugin", ["--signer-name", "example.com/nope"], /not a built-in signer/],
    ["--expiration-seconds below 600", ["--expiration-seconds", "300"], /--expiration-seconds/],
    ["--expiration-seconds that is not a number", ["--expiration-seconds", "1h"], /--expiration-seconds/],
    ["a --max-duration that is not a duration", ["--max-duration", "one year"], /--max-duration/],
    ["--policy together with --plugin", ["--policy", "p.yaml", "--plugin", "p.js"], /exclude each other/],
    ["a bad --group-suffix", ["--group-suffix", "local"], /groupSuffix/],
  ])("treats %s as a usage error (exit 2)", async (_, flags, message) => {
    const args = flags[0] === "sign" ? flags : ["--signer-name", SIGNERS.apiserverClient, "--usages", CLIENT_USAGES, "--csr", CA_CERT, ...flags];
    const r = flags[0] === "sign" ? await runCli(args) : await sign(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(message);
  });

  it.each<[string, () => Promise<string[]>, RegExp]>([
    ["a CSR file that does not exist", async () => ["--csr", join(dir, "missing.csr")], /cannot read CSR file .*missing\.csr: ENOENT/],
    ["a CSR file that holds a certificate", async () => ["--csr", CA_CERT], /CERTIFICATE/],
    ["an empty CSR file", async () => { writeFileSync(join(dir, "empty.csr"), ""); return ["--csr", join(dir, "empty.csr")]; }, /PEM/],
    ["a CA key that does not match the CA certificate", async () => {
      const other = await generateCa({ commonName: "other", keyType: "p256", lifetimeSeconds: 86400, now: new Date() });
      await writePrivateKeyFile(join(dir, "other.key"), other.keyPem);
      return ["--csr", await csrFile("x", { cn: "x" }), "--ca-key", join(dir, "other.key")];
    }, /does not belong/],
    ["a CA certificate file that does not exist", async () => ["--csr", await csrFile("x", { cn: "x" }), "--ca-cert", join(dir, "nope.crt")], /nope\.crt/],
  ])("fails with exit 1 and no stack trace on %s", async (_, flags, message) => {
    const r = await sign(["--signer-name", SIGNERS.apiserverClient, "--usages", CLIENT_USAGES, ...(await flags())]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: /);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });

  describe("with a custom signer policy (--policy)", () => {
    const policyFile = join(dir, "services.yaml");
    beforeAll(() => {
      writeFileSync(policyFile, [
        "signerName: example.test/services",
        "subject:",
        '  permitted: { CN: ["*.svc.example.test"] }',
        "  required: [CN]",
        "subjectAltNames:",
        '  dns: { permitted: ["*.svc.example.test"] }',
        "usages:",
        "  required: [digital signature, server auth]",
        "lifetime: { default: 24h, maximum: 48h }",
      ].join("\n"));
    });

    it("signs a CSR its rules permit, with the policy's default lifetime", async () => {
      const path = await csrFile("svc", { cn: "api.svc.example.test", dns: ["api.svc.example.test"] });
      const r = await sign(["--policy", policyFile, "--signer-name", "example.test/services", "--usages", "digital signature,server auth", "--csr", path]);
      expect([r.code, r.stderr]).toEqual([0, ""]);
      writeFileSync(join(dir, "svc.pem"), r.stdout);
      expect(await opensslVerifies(CA_CERT, join(dir, "svc.pem"), "sslserver")).toBe(true);
      expect(lifetimeSeconds(r.stdout)).toBe(24 * 3600);
    });

    it("refuses a subject outside the policy with exit 1", async () => {
      const path = await csrFile("svc-bad", { cn: "api.example.test", dns: ["api.example.test"] });
      const r = await sign(["--policy", policyFile, "--signer-name", "example.test/services", "--usages", "digital signature,server auth", "--csr", path]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: .*api\.example\.test/);
    });

    it("refuses a --signer-name the policy is not for", async () => {
      const path = await csrFile("svc", { cn: "api.svc.example.test", dns: ["api.svc.example.test"] });
      const r = await sign(["--policy", policyFile, "--signer-name", "example.test/other", "--usages", "digital signature,server auth", "--csr", path]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/example\.test\/services/);
    });
  });

  describe("with a code plug-in (--plugin)", () => {
    const plugin = join(REPO, "dist/signers/examples/example-plugin.js");

    it("signs through the plug-in, which loads the CA from --ca-cert and --ca-key", async () => {
      const path = await csrFile("short", { cn: "erin" });
      const r = await sign(["--plugin", plugin, "--signer-name", "example.com/short-lived", "--usages", CLIENT_USAGES, "--csr", path, "--expiration-seconds", "86400"]);
      expect([r.code, r.stderr]).toEqual([0, ""]);
      expect(lifetimeSeconds(r.stdout)).toBe(3600 + 300);
      expect(new X509Certificate(r.stdout).verify(new X509Certificate(readFileSync(CA_CERT)).publicKey)).toBe(true);
    });

    it("refuses a --signer-name the plug-in does not provide", async () => {
      const r = await sign(["--plugin", plugin, "--signer-name", "example.com/other", "--usages", CLIENT_USAGES, "--csr", await csrFile("x", { cn: "x" })]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/provides signer example\.com\/short-lived, not example\.com\/other/);
    });

    it("fails with exit 1 when the module does not load", async () => {
      const r = await sign(["--plugin", join(dir, "nope.js"), "--signer-name", "example.com/x", "--usages", CLIENT_USAGES, "--csr", await csrFile("x", { cn: "x" })]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: signer plug-in .*nope\.js/);
    });
  });
});
