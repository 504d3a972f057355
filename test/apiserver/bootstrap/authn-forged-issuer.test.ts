// A client certificate naming the cluster CA as issuer but signed by another key, without an authority key
// identifier: the TLS layer's own (ignored) chain check fails on its signature, and every request is still a 401.
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { describe, expect, it } from "vitest";
import { useSecureFixture } from "./fixtures.js";

const fx = useSecureFixture();

/** openssl's -subj form of a subject node prints one attribute per line (`CN=...`). */
const subj = (subject: string) => subject.split("\n").map((line) => `/${line}`).join("");

/** With openssl: a CA of the same subject as `caPem` on a fresh key of `curve`, and a client certificate it signs without AKI. */
function forgedClientCert(caPem: string, curve: string): { pem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), "forged-issuer-"));
  const at = (f: string) => join(dir, f);
  const openssl = (args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "pipe", "pipe"] });
  const subject = subj(new X509Certificate(caPem).subject);
  openssl(["req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", `ec_paramgen_curve:${curve}`, "-nodes", "-keyout", at("ca.key"), "-subj", subject, "-days", "7300", "-out", at("ca.crt"), "-addext", "basicConstraints=critical,CA:true", "-addext", "subjectKeyIdentifier=none"]);
  openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", at("leaf.key"), "-subj", "/CN=mallory/O=system:masters", "-out", at("leaf.csr")]);
  execFileSync("sh", ["-c", `printf 'extendedKeyUsage=clientAuth\\nsubjectKeyIdentifier=none\\nauthorityKeyIdentifier=none\\n' > ${at("ext.cnf")}`]);
  openssl(["x509", "-req", "-in", at("leaf.csr"), "-CA", at("ca.crt"), "-CAkey", at("ca.key"), "-CAcreateserial", "-days", "7300", "-extfile", at("ext.cnf"), "-out", at("leaf.crt")]);
  const pem = readFileSync(at("leaf.crt"), "utf8");
  expect(openssl(["x509", "-in", at("leaf.crt"), "-noout", "-text"]).toString()).not.toContain("Authority Key Identifier");
  return { pem, keyPem: readFileSync(at("leaf.key"), "utf8") };
}

/**
 * One request on a new TLS connection, written a moment after the handshake: the server has then read everything
 * the handshake sent and waits for more, which is when a stale TLS error used to surface (not when the request
 * arrives with the client's last handshake message, as most clients send it).
 */
function lateRequest(address: string, cert: { pem: string; keyPem: string }): Promise<{ status: number; body: any }> {
  const url = new URL(address);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false, cert: cert.pem, key: cert.keyPem }, () => {
      setTimeout(() => socket.write(`GET /api/v1/namespaces HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`), 30);
    });
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (text += d));
    socket.on("error", reject);
    socket.on("close", () => {
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0);
      const body = text.slice(text.indexOf("\r\n\r\n") + 4);
      let parsed: any;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = body;
      }
      resolve({ status, body: parsed });
    });
  });
}

describe("a client certificate whose issuer name is the cluster CA's but whose signature is not", () => {
  it.each(["P-256", "P-384"])("answers 401 with the x509 reason on every new connection (forger key %s)", async (curve) => {
    const f = fx();
    const cert = forgedClientCert(readFileSync(f.state.pki.caFiles.certFile, "utf8"), curve);
    const answers = new Map<string, number>();
    // Without the fix about a third of these connections answered 400 ERR_SSL_EVP_LIB: 30 makes a miss unlikely.
    for (let i = 0; i < 30; i++) {
      const r = await lateRequest(f.state.server.address, cert);
      const key = `${r.status} ${r.body?.message}`;
      answers.set(key, (answers.get(key) ?? 0) + 1);
    }
    expect([...answers.keys()]).toEqual(["401 Unauthorized: x509: certificate signed by unknown authority"]);
  });
});
