import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../src/api/group.js";
import { createTestAuthority, type IssuedPair, type TestAuthority } from "../src/testing.js";
import { csr } from "./fixtures/csr.js";

const SIGNERS = groupNames().signers;

/** Starts an HTTPS server with `server`'s certificate; when `clientCa` is given it asks for and checks client certificates. */
async function httpsServer(server: IssuedPair, clientCa?: string): Promise<{ port: number; close: () => Promise<void> }> {
  const srv = https.createServer({ cert: server.tls.cert, key: server.tls.key, ...(clientCa && { ca: clientCa, requestCert: true, rejectUnauthorized: true }) }, (req, res) => {
    const peer = (req.socket as tls.TLSSocket).getPeerCertificate();
    res.end(peer?.subject?.CN ? `hello ${peer.subject.CN}` : "hello");
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return { port: (srv.address() as AddressInfo).port, close: () => new Promise((resolve) => srv.close(() => resolve())) };
}

function get(port: number, options: https.RequestOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    https.get({ host: "127.0.0.1", port, path: "/", ...options }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve(body));
    }).on("error", reject);
  });
}

describe("createTestAuthority", () => {
  let authority: TestAuthority;
  beforeAll(async () => {
    authority = await createTestAuthority();
  });

  it("serves HTTPS with an issued certificate that a client trusting caPem accepts", async () => {
    const server = await authority.issueServer();
    const s = await httpsServer(server);
    try {
      expect(await get(s.port, { ca: authority.caPem, servername: "localhost" })).toBe("hello");
    } finally {
      await s.close();
    }
  });

  it("fails the handshake for a client that does not trust the CA", async () => {
    const other = await createTestAuthority();
    const s = await httpsServer(await authority.issueServer());
    try {
      await expect(get(s.port, { ca: other.caPem, servername: "localhost" })).rejects.toMatchObject({ code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
    } finally {
      await s.close();
    }
  });

  it("fails the handshake for a host name the certificate does not carry", async () => {
    const s = await httpsServer(await authority.issueServer({ dns: ["api.test"] }));
    try {
      await expect(get(s.port, { ca: authority.caPem, servername: "localhost" })).rejects.toMatchObject({ code: "ERR_TLS_CERT_ALTNAME_INVALID" });
    } finally {
      await s.close();
    }
  });

  it("authenticates a client certificate over mutual TLS", async () => {
    const s = await httpsServer(await authority.issueServer(), authority.caPem);
    const client = await authority.issueClient({ cn: "alice", o: ["dev"] });
    try {
      expect(await get(s.port, { ca: authority.caPem, servername: "localhost", cert: client.tls.cert, key: client.tls.key })).toBe("hello alice");
    } finally {
      await s.close();
    }
  });

  it("gives the issued pair the leaf alone, its chain, and the CA", async () => {
    const pair = await authority.issueServer({ dns: ["a.test"], ip: ["10.1.2.3"], lifetimeSeconds: 3600, keyType: "rsa2048" });
    const leaf = new X509Certificate(pair.certPem);
    expect(pair.certPem.match(/BEGIN CERTIFICATE/g)).toHaveLength(1);
    expect(pair.chainPem.startsWith(pair.certPem)).toBe(true);
    expect(pair.caPem).toBe(authority.caPem);
    expect(leaf.subjectAltName).toBe("DNS:a.test, IP Address:10.1.2.3");
    expect(leaf.verify(new X509Certificate(authority.caPem).publicKey)).toBe(true);
    expect(leaf.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(leaf.checkPrivateKey((await import("node:crypto")).createPrivateKey(pair.keyPem))).toBe(true);
  });

  it("signs a CSR through a built-in signer's rules and reports a refusal with the signer's reason", async () => {
    const ok = await authority.signCsr((await csr({ cn: "system:node:n1", o: ["system:nodes"] })).pem, {
      signerName: SIGNERS.nodeagentClient,
      usages: ["digital signature", "client auth"],
      expirationSeconds: 3600,
    });
    const cert = new X509Certificate(ok);
    expect(cert.subject).toBe("CN=system:node:n1\nO=system:nodes");
    expect((Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 1000).toBe(3600 + 300);
    await expect(
      authority.signCsr((await csr({ cn: "bob" })).pem, { signerName: SIGNERS.nodeagentClient, usages: ["digital signature", "client auth"] }),
    ).rejects.toMatchObject({ code: "SIGNER_REJECTED", message: expect.stringMatching(/system:node/) });
  });

  it("signs with the legacy-unknown signer when no signer is named", async () => {
    const pem = await authority.signCsr((await csr({ cn: "anything", dns: ["x.test"] })).pem, { usages: ["server auth"] });
    expect(new X509Certificate(pem).subjectAltName).toBe("DNS:x.test");
  });

  it("hands out the built-in signers for embedding, publishing the CA as their trust anchor", () => {
    const signer = authority.signer(SIGNERS.apiserverClient);
    expect(signer.signerName).toBe(SIGNERS.apiserverClient);
    expect(signer.ready()).toBe(true);
    expect(signer.trustAnchors()).toEqual([authority.caPem]);
    expect(() => authority.signer("example.test/none")).toThrow(expect.objectContaining({ code: "SIGNER_UNKNOWN" }));
  });

  it("writes the CA to a directory only when asked, the key 0600", async () => {
    const dir = mkdtempSync(join(tmpdir(), "platform-ca-testing-"));
    try {
      const files = await authority.writeTo(join(dir, "ca"));
      expect(readFileSync(files.certFile, "utf8")).toBe(authority.caPem);
      expect(statSync(files.keyFile).mode & 0o777).toBe(0o600);
      expect(statSync(files.certFile).mode & 0o777).toBe(0o644);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a client certificate without a common name", async () => {
    await expect(authority.issueClient({} as { cn: string })).rejects.toMatchObject({ code: "INVALID_OPTION", message: "expected `cn` to be a non-empty string, got nothing" });
  });

  it("names what is wrong with a name it cannot put in a certificate", async () => {
    await expect(authority.issueServer({ dns: ["bad name!"] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: '"bad name!" is not a valid DNS name' });
    await expect(authority.issueServer({ dns: ["a..b"] })).rejects.toMatchObject({ message: '"a..b" is not a valid DNS name' });
    await expect(authority.issueClient({ cn: "c", email: ["me @x.test"] } as never)).rejects.toMatchObject({ message: '"me @x.test" is not a valid email address' });
    expect((await authority.issueServer({ dns: ["*.Wild_card.test"] })).certPem).toContain("BEGIN CERTIFICATE");
  });
});

describe("createTestAuthority with options", () => {
  const T = new Date("2040-05-01T00:00:00Z");

  it("dates the CA and every certificate by the injected clock", async () => {
    const authority = await createTestAuthority({ now: () => T, lifetimeSeconds: 30 * 86400 });
    const leaf = new X509Certificate((await authority.issueClient({ cn: "later", lifetimeSeconds: 7200 })).certPem);
    expect(new Date(leaf.validFrom).toISOString()).toBe("2040-04-30T23:55:00.000Z");
    expect(new Date(leaf.validTo).toISOString()).toBe("2040-05-01T02:00:00.000Z");
    expect(new Date(new X509Certificate(authority.caPem).validTo).toISOString()).toBe("2040-05-31T00:00:00.000Z");
  });

  it("registers custom signers from policies and names built-ins with the group suffix", async () => {
    const authority = await createTestAuthority({
      groupSuffix: "k8s.io",
      keyType: "p384",
      policies: ["signerName: example.test/web\nsubjectAltNames: { dns: { permitted: ['*.web.test'] } }\nusages: { required: [server auth] }\n"],
    });
    expect(authority.signer("kubernetes.io/kube-apiserver-client").signerName).toBe("kubernetes.io/kube-apiserver-client");
    const pem = await authority.signCsr((await csr({ cn: "a", dns: ["a.web.test"] })).pem, { signerName: "example.test/web", usages: ["server auth"] });
    expect(new X509Certificate(pem).verify(new X509Certificate(authority.caPem).publicKey)).toBe(true);
    await expect(
      authority.signCsr((await csr({ cn: "a", dns: ["a.other.test"] })).pem, { signerName: "example.test/web", usages: ["server auth"] }),
    ).rejects.toMatchObject({ code: "SIGNER_REJECTED" });
  });
});

describe("the platform-ca/testing package export", () => {
  it("resolves to the built library, which another program imports by the package name", () => {
    const script = [
      'import { createTestAuthority } from "platform-ca/testing";',
      "const ca = await createTestAuthority();",
      'const server = await ca.issueServer({ dns: ["svc.test"] });',
      "process.stdout.write(JSON.stringify({ same: server.caPem === ca.caPem, keys: Object.keys(server.tls) }));",
    ].join("\n");
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: fileURLToPath(new URL("..", import.meta.url)), timeout: 30_000 });
    expect(JSON.parse(out.toString())).toEqual({ same: true, keys: ["cert", "key", "ca"] });
  });
});
