// `certificate inspect` and `describe csr` read certificates as `openssl x509 -text` does; chains are checked as `openssl verify` does.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { inspectCertificate, inspectionText } from "../../../src/cli/ctl/certificate-inspect.js";
import { CTL, oneClearError, runNode, useUpServer } from "./fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const openssl = (args: readonly string[]) => execFileSync("openssl", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

/** The fields of `openssl x509 -text` the inspection shows, in the inspection's own shapes. */
function fromOpensslText(certFile: string) {
  const text = openssl(["x509", "-in", certFile, "-noout", "-text"]);
  const after = (label: string) => new RegExp(`${label}[^\\n]*\\n\\s+([^\\n]+)`).exec(text)?.[1]?.trim();
  const ku: Record<string, string> = { "Digital Signature": "digitalSignature", "Key Encipherment": "keyEncipherment", "Certificate Sign": "keyCertSign", "CRL Sign": "cRLSign" };
  const eku: Record<string, string> = { "TLS Web Server Authentication": "server auth", "TLS Web Client Authentication": "client auth" };
  const sans = (after("X509v3 Subject Alternative Name:") ?? "").split(", ").filter(Boolean);
  const pick = (prefix: string) => sans.filter((s) => s.startsWith(prefix)).map((s) => s.slice(prefix.length));
  const bits = /Public-Key: \((\d+) bit\)/.exec(text)![1];
  const curve = /NIST CURVE: (P-\d+)/.exec(text)?.[1];
  const bc = /CA:(TRUE|FALSE)(?:, pathlen:(\d+))?/.exec(text);
  return {
    // -nameopt RFC2253 prints RFC 4514 order (most specific first), as the inspection does.
    subject: openssl(["x509", "-in", certFile, "-noout", "-subject", "-nameopt", "RFC2253"]).trim().replace(/^subject=/, ""),
    issuer: openssl(["x509", "-in", certFile, "-noout", "-issuer", "-nameopt", "RFC2253"]).trim().replace(/^issuer=/, ""),
    serialNumber: /Serial Number:\s*\n\s+([0-9a-f:]+)/.exec(text)?.[1] ?? BigInt(/Serial Number: (\d+)/.exec(text)![1]!).toString(16).replace(/^(.(..)*)$/, "0$1").replace(/(..)(?!$)/g, "$1:"),
    notBefore: new Date(after("Validity")!.replace(/^Not Before: /, "")).toISOString(),
    notAfter: new Date(/Not After : (.*)/.exec(text)![1]!).toISOString(),
    publicKey: curve ? { algorithm: "ECDSA", curve, bits: Number(bits) } : { algorithm: "RSA", bits: Number(bits) },
    signatureAlgorithm: /Signature Algorithm: (\S+)/.exec(text)![1],
    // openssl writes IPv6 in full (2001:DB8:0:0:…); the inspection in RFC 5952 form, as URL hosts are.
    subjectAltNames: { dns: pick("DNS:"), ip: pick("IP Address:").map((ip) => (ip.includes(":") ? new URL(`http://[${ip}]`).hostname.slice(1, -1) : ip)), email: pick("email:"), uri: pick("URI:") },
    keyUsages: (after("X509v3 Key Usage:") ?? "").split(", ").filter(Boolean).map((u) => ku[u] ?? u),
    extendedKeyUsages: (after("X509v3 Extended Key Usage:") ?? "").split(", ").filter(Boolean).map((u) => eku[u] ?? u),
    isCa: bc?.[1] === "TRUE",
    ...(bc?.[2] !== undefined && { pathLen: Number(bc[2]) }),
    sha256Fingerprint: openssl(["x509", "-in", certFile, "-noout", "-fingerprint", "-sha256"]).trim().replace(/^sha256 Fingerprint=/i, ""),
  };
}

const inspectJson = async (args: readonly string[]) => {
  const r = await runNode(CTL, ["certificate", "inspect", ...args, "-o", "json"]);
  return { ...r, json: r.stdout ? JSON.parse(r.stdout) : undefined };
};

describe("certificate inspect -f: files made by openssl", () => {
  const dir = tempDir("inspect-");
  const f = (name: string) => join(dir, name);
  beforeAll(() => {
    const ext = (name: string, body: string) => writeFileSync(f(name), body);
    ext("root.ext", "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n");
    ext("inter.ext", "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n");
    ext("leaf.ext", "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:web.example.test,DNS:*.web.example.test,IP:10.0.0.5,IP:2001:db8::1,email:ops@example.test,URI:spiffe://example.test/web\n");
    openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384", "-nodes", "-keyout", f("root.key"), "-out", f("root.pem"), "-subj", "/O=Example/CN=Example Root", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE,pathlen:1"]);
    openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f("inter.key"), "-out", f("inter.csr"), "-subj", "/CN=Example Intermediate"]);
    openssl(["x509", "-req", "-in", f("inter.csr"), "-CA", f("root.pem"), "-CAkey", f("root.key"), "-out", f("inter.pem"), "-days", "20", "-extfile", f("inter.ext"), "-set_serial", "0x1234"]);
    openssl(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f("leaf.key"), "-out", f("leaf.csr"), "-subj", "/C=DE/O=Example/OU=Web/CN=web.example.test"]);
    openssl(["x509", "-req", "-in", f("leaf.csr"), "-CA", f("inter.pem"), "-CAkey", f("inter.key"), "-out", f("leaf.pem"), "-days", "10", "-extfile", f("leaf.ext")]);
    writeFileSync(f("chain.pem"), openssl(["x509", "-in", f("leaf.pem")]) + openssl(["x509", "-in", f("inter.pem")]));
    openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f("other.key"), "-out", f("other.pem"), "-subj", "/CN=Other Root", "-days", "30"]);
  });

  it.each(["leaf.pem", "inter.pem", "root.pem"])("shows what openssl x509 -text shows for %s", async (file) => {
    const { code, json } = await inspectJson(["-f", f(file)]);
    expect(code).toBe(0);
    const { remainingSeconds, chain, selfSigned, ...shown } = json;
    expect(shown).toEqual(fromOpensslText(f(file)));
    expect(selfSigned).toBe(file === "root.pem");
    expect(chain).toEqual([]);
    expect(Math.abs(remainingSeconds - (Date.parse(shown.notAfter) - Date.now()) / 1000)).toBeLessThan(60);
  });

  it("prints a text page with every field, and verifies a chain through its intermediate as openssl verify does", async () => {
    expect(openssl(["verify", "-CAfile", f("root.pem"), "-untrusted", f("inter.pem"), f("leaf.pem")])).toContain("OK");
    const r = await runNode(CTL, ["certificate", "inspect", "-f", f("chain.pem"), "--trust-bundle", f("root.pem")]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Subject:              CN=web.example.test,OU=Web,O=Example,C=DE\n");
    expect(r.stdout).toContain("Subject Alt Names:    DNS:web.example.test, DNS:*.web.example.test, IP:10.0.0.5, IP:2001:db8::1, email:ops@example.test, URI:spiffe://example.test/web\n");
    expect(r.stdout).toMatch(/^Not After:\s+\S+Z \(expires in (9|10)d\)$/m);
    expect(r.stdout).toContain("Public Key:           RSA 2048\n");
    expect(r.stdout).toContain("Key Usages:           digitalSignature, keyEncipherment\n");
    expect(r.stdout).toContain("Extended Key Usages:  server auth, client auth\n");
    expect(r.stdout).toContain("CA:                   false\n");
    expect(r.stdout).toContain("Intermediates:        CN=Example Intermediate\n");
    expect(r.stdout).toContain(`Chain:                verified against ${f("root.pem")} (anchor O=Example,CN=Example Root)`.replace("O=Example,CN=Example Root", "CN=Example Root,O=Example"));
  });

  it("reads the certificate from stdin with -f -", async () => {
    const r = await runNode(CTL, ["certificate", "inspect", "-f", "-", "-o", "yaml"], { stdin: readFileSync(f("inter.pem"), "utf8") });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^subject: CN=Example Intermediate$/m);
    expect(r.stdout).toMatch(/^pathLen: 0$/m);
  });

  it("exits 1 when the chain does not verify, as openssl verify refuses it", async () => {
    expect(() => openssl(["verify", "-CAfile", f("other.pem"), "-untrusted", f("inter.pem"), f("leaf.pem")])).toThrow();
    const r = await runNode(CTL, ["certificate", "inspect", "-f", f("chain.pem"), "--trust-bundle", f("other.pem")]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^Chain:\s+NOT verified against .*other\.pem: no certificate of the trust bundle signed it/m);
    expect(oneClearError(r)).toMatch(/^error: the certificate does not verify: /);
    // Without the intermediate in the file, the leaf does not reach the root either.
    expect((await runNode(CTL, ["certificate", "inspect", "-f", f("leaf.pem"), "--trust-bundle", f("root.pem")])).code).toBe(1);
  });

  it("says so when the signer publishes no bundle to check against", () => {
    const absent = "no ClusterTrustBundle is published for signer example.com/none";
    const page = inspectionText(inspectCertificate(readFileSync(f("leaf.pem"), "latin1"), "leaf.pem", { names: [], pem: "", absent }));
    expect(page).toMatch(new RegExp(`^Chain: +NOT verified: ${absent}\n$`, "m"));
  });

  it("refuses a file that holds no certificate, and a name together with -f, in one line", async () => {
    const r = await runNode(CTL, ["certificate", "inspect", "-f", f("leaf.key")]);
    expect([r.code, oneClearError(r)]).toEqual([1, `error: ${f("leaf.key")}: block 1 (label "PRIVATE KEY"): expected label "CERTIFICATE"`]);
    writeFileSync(f("empty.pem"), "nothing here\n");
    const empty = await runNode(CTL, ["certificate", "inspect", "-f", f("empty.pem")]);
    expect([empty.code, oneClearError(empty)]).toEqual([1, `error: ${f("empty.pem")}: no PEM block found`]);
    const both = await runNode(CTL, ["certificate", "inspect", "x", "-f", f("leaf.pem")]);
    expect(both.code).toBe(2);
    expect(oneClearError(both)).toContain("name one certificate signing request, or give -f FILE (not both)");
  });
});

describe("certificate inspect NAME and describe csr: against the server", () => {
  const server = useUpServer();

  it("summarizes the issued certificate, verified against the signer's ClusterTrustBundle, as openssl reads it", async () => {
    const dir = tempDir("inspect-");
    const req = await server.up.ctl(["certificate", "request", "agent-1", "--signer", "platform.io/apiserver-client-nodeagent", "--cn", "system:node:agent-1", "--o", "system:nodes", "--key-out", join(dir, "k.pem"), "--wait", "--cert-out", join(dir, "c.pem")]);
    expect(req.code).toBe(0);
    const r = await server.up.ctl(["certificate", "inspect", "agent-1", "-o", "json"]);
    expect(r.code).toBe(0);
    const { remainingSeconds: _r, chain: _c, selfSigned: _s, verification, ...shown } = JSON.parse(r.stdout);
    expect(shown).toEqual(fromOpensslText(join(dir, "c.pem")));
    expect(verification).toMatchObject({ verified: true, anchor: "CN=platform-ca cluster CA", trustBundles: [expect.stringMatching(/^ClusterTrustBundle platform\.io:apiserver-client-nodeagent:[0-9a-f]{16}$/)] });

    const page = await server.up.ctl(["describe", "csr", "agent-1"]);
    expect(page.code).toBe(0);
    expect(page.stdout).toMatch(/^Certificate:\n {2}Subject: +CN=system:node:agent-1,O=system:nodes\n/m);
    expect(page.stdout).toContain(`  Serial Number:        ${shown.serialNumber}\n`);
    expect(page.stdout).toMatch(/^ {2}Chain: +verified against ClusterTrustBundle platform\.io:apiserver-client-nodeagent:/m);
  });

  it("says what to do for a CSR without a certificate yet, and describe shows no Certificate section", async () => {
    const dir = tempDir("inspect-");
    expect((await server.up.ctl(["certificate", "request", "pending-1", "--cn", "pending-1", "--key-out", join(dir, "k.pem")])).code).toBe(0);
    const r = await server.up.ctl(["certificate", "inspect", "pending-1"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toBe("error: certificate signing request pending-1 has no certificate yet: see platformctl describe csr pending-1 (it must be approved, then issued by its signer)");
    expect((await server.up.ctl(["describe", "csr", "pending-1"])).stdout).not.toContain("Certificate:");
  });
});
