// Certificates issued from openssl-made CSRs checked by openssl, GnuTLS certtool, python cryptography and real TLS.
import { once } from "node:events";
import { join } from "node:path";
import { connect, createServer, type TLSSocket } from "node:tls";
import { beforeAll, describe, expect, it } from "vitest";
import { generateCa, type GeneratedCa } from "../../src/pki/ca.js";
import { parseCsr } from "../../src/pki/csr.js";
import { Issuer, type IssuedCertificate } from "../../src/pki/issue.js";
import type { KeyType } from "../../src/pki/keys.js";
import { computeValidity } from "../../src/pki/validity.js";
import { opensslText, profile } from "../pki/issuance-fixtures.js";
import { tempDir, writeFiles } from "../fixtures/temp-dir.js";
import { run, tryRun } from "../fixtures/process.js";

const dir = tempDir("interop-");
const CA_TYPES: readonly KeyType[] = ["p256", "p384", "rsa2048", "ed25519"];
const CSR_TYPES = {
  "RSA 2048": ["-newkey", "rsa:2048"],
  "EC P-256": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
  "EC P-384": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"],
  Ed25519: ["-newkey", "ed25519"],
} as const;
type CsrType = keyof typeof CSR_TYPES;
const SERVING_AND_CLIENT = ["digital signature", "key encipherment", "server auth", "client auth"];

interface Issued {
  readonly caType: KeyType;
  readonly csrType: CsrType;
  readonly cert: IssuedCertificate;
  readonly caPem: string;
  readonly certFile: string;
  readonly caFile: string;
}

// Real tools check validity against the real clock, so these certificates start now.
const now = new Date();
const cas = new Map<KeyType, GeneratedCa>();
const csrs = new Map<CsrType, { pem: string; keyPem: string }>();
const issued: Issued[] = [];

/** `openssl req -new` with the given key options; returns the CSR and its key. */
function opensslCsr(name: string, keyArgs: readonly string[], cn: string): { pem: string; keyPem: string } {
  const keyFile = join(dir, `${name}.key`);
  const pem = run("openssl", ["req", "-new", ...keyArgs, "-nodes", "-keyout", keyFile, "-subj", `/CN=${cn}/O=interop`,
    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]);
  return { pem, keyPem: run("openssl", ["pkey", "-in", keyFile]) };
}

function issue(ca: GeneratedCa, csrPem: string, usages = SERVING_AND_CLIENT): IssuedCertificate {
  const validity = computeValidity({ now, expirationSeconds: 3600, maxDurationSeconds: 86_400, caNotBefore: ca.ca.notBefore, caNotAfter: ca.ca.notAfter });
  return new Issuer(ca.ca).issue({ csr: parseCsr(csrPem), profile: profile({ usages }), validity });
}

beforeAll(async () => {
  for (const t of CA_TYPES) cas.set(t, await generateCa({ commonName: `interop ${t} CA`, keyType: t, lifetimeSeconds: 30 * 86_400, now }));
  for (const [name, args] of Object.entries(CSR_TYPES) as [CsrType, readonly string[]][]) {
    csrs.set(name, opensslCsr(name.replace(/\W/g, ""), args, `interop ${name}`));
  }
  for (const caType of CA_TYPES) {
    const ca = cas.get(caType)!;
    const caFile = join(dir, `ca-${caType}.pem`);
    writeFiles(dir, { [`ca-${caType}.pem`]: ca.certPem });
    for (const csrType of Object.keys(CSR_TYPES) as CsrType[]) {
      const cert = issue(ca, csrs.get(csrType)!.pem);
      const certFile = join(dir, `leaf-${caType}-${csrType.replace(/\W/g, "")}.pem`);
      writeFiles(dir, { [certFile.slice(dir.length + 1)]: cert.pem });
      issued.push({ caType, csrType, cert, caPem: ca.certPem, certFile, caFile });
    }
  }
}, 120_000);

const cases = () => CA_TYPES.flatMap((caType) => (Object.keys(CSR_TYPES) as CsrType[]).map((csrType) => ({ caType, csrType })));
const find = (caType: KeyType, csrType: CsrType) => issued.find((i) => i.caType === caType && i.csrType === csrType)!;

describe("interoperability of issued certificates", () => {
  it.each(cases())("openssl verifies a $csrType certificate from the $caType CA and shows every extension", ({ caType, csrType }) => {
    const i = find(caType, csrType);
    expect(run("openssl", ["verify", "-purpose", "sslserver", "-CAfile", i.caFile, i.certFile])).toContain(": OK");
    expect(run("openssl", ["verify", "-purpose", "sslclient", "-CAfile", i.caFile, i.certFile])).toContain(": OK");
    const text = opensslText(i.cert.pem);
    expect(text).toMatch(/X509v3 Key Usage: critical\n\s*Digital Signature, Key Encipherment\n/);
    expect(text).toMatch(/X509v3 Extended Key Usage: \n\s*TLS Web Server Authentication, TLS Web Client Authentication\n/);
    expect(text).toMatch(/X509v3 Subject Alternative Name: \n\s*DNS:localhost, IP Address:127.0.0.1\n/);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\n\s*CA:FALSE\n/);
    expect(text).toMatch(/X509v3 Subject Key Identifier: \n\s*[0-9A-F:]{59}\n/);
    const aki = /X509v3 Authority Key Identifier: \n\s*(?:keyid:)?([0-9A-F:]{59})\n/.exec(text)?.[1];
    const caSki = /X509v3 Subject Key Identifier: \n\s*([0-9A-F:]{59})\n/.exec(opensslText(i.caPem))?.[1];
    expect(aki).toBe(caSki);
    expect(text).toContain(`Subject: CN = interop ${csrType}, O = interop`);
  });

  it.each(cases())("GnuTLS certtool verifies a $csrType certificate from the $caType CA", ({ caType, csrType }) => {
    const i = find(caType, csrType);
    const r = tryRun("certtool", ["--verify", "--load-ca-certificate", i.caFile, "--infile", i.certFile]);
    expect(r.out).toContain("Chain verification output: Verified.");
    expect(r.status).toBe(0);
  });

  it("python cryptography loads and verifies every certificate, with its X.509 verifier where its policy applies", () => {
    const script = String.raw`
import json, sys, datetime
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store, DNSName
out = []
for item in json.load(sys.stdin):
    ca = x509.load_pem_x509_certificate(item["ca"].encode())
    leaf = x509.load_pem_x509_certificate(item["cert"].encode())
    leaf.verify_directly_issued_by(ca)
    how = "direct"
    if item["webpki"]:
        builder = PolicyBuilder().store(Store([ca])).time(datetime.datetime.now(datetime.timezone.utc))
        chain = builder.build_server_verifier(DNSName("localhost")).verify(leaf, [])
        client = builder.build_client_verifier().verify(leaf, [])
        assert chain[0] == leaf and client.chain[-1] == ca
        how = "verifier"
    out.append(how)
print(json.dumps(out))
`;
    // The Web PKI policy of the verifier admits RSA and ECDSA only; Ed25519 pairs are checked signature-wise.
    const items = issued.map((i) => ({ ca: i.caPem, cert: i.cert.pem, webpki: i.caType !== "ed25519" && i.csrType !== "Ed25519" }));
    const result = JSON.parse(run("python3", ["-c", script], JSON.stringify(items))) as string[];
    expect(result).toEqual(items.map((i) => (i.webpki ? "verifier" : "direct")));
    expect(result.filter((r) => r === "verifier")).toHaveLength(9);
  });

  it("python cryptography rejects a certificate checked against another CA", () => {
    const a = find("p256", "EC P-256");
    const other = cas.get("p384")!.certPem;
    const script = "import sys,json\nfrom cryptography import x509\nd=json.load(sys.stdin)\ntry:\n  x509.load_pem_x509_certificate(d['cert'].encode()).verify_directly_issued_by(x509.load_pem_x509_certificate(d['ca'].encode()))\n  print('accepted')\nexcept Exception as e:\n  print('rejected')";
    expect(run("python3", ["-c", script], JSON.stringify({ ca: other, cert: a.cert.pem })).trim()).toBe("rejected");
  });
});

interface Handshake {
  readonly ok: boolean;
  readonly serverSawClient?: string;
  readonly serverError?: string;
}

/** A node:tls server requiring client certificates from `caPem`, and one client connecting to it on loopback. */
async function handshake(server: { cert: string; key: string; caPem: string }, client: { cert: string; key: string; caPem: string; servername?: string }): Promise<Handshake> {
  const srv = createServer({ cert: server.cert, key: server.key, ca: server.caPem, requestCert: true, rejectUnauthorized: true });
  const seen = new Promise<Handshake>((resolve) => {
    srv.on("secureConnection", (s: TLSSocket) => {
      const cn = s.getPeerCertificate().subject?.CN;
      s.end("hello");
      resolve({ ok: true, serverSawClient: Array.isArray(cn) ? cn.join(",") : cn });
    });
    // Node verifies the client certificate after the handshake and closes the socket, noting why on it.
    srv.on("tlsClientError", (err, s) => resolve({ ok: false, serverError: String((s as TLSSocket & { authorizationError?: string }).authorizationError ?? err.message) }));
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const port = (srv.address() as { port: number }).port;
  const socket = connect({ host: "127.0.0.1", port, cert: client.cert, key: client.key, ca: client.caPem, ...(client.servername && { servername: client.servername }) });
  socket.on("error", () => undefined);
  try {
    return await seen;
  } finally {
    socket.destroy();
    srv.close();
  }
}

describe("TLS with issued certificates", () => {
  it.each(CA_TYPES)("completes a mutual TLS handshake on loopback with certificates from the %s CA", async (caType) => {
    const ca = cas.get(caType)!;
    const serverCsr = csrs.get(caType === "rsa2048" ? "RSA 2048" : "EC P-256")!;
    const clientCsr = csrs.get(caType === "ed25519" ? "Ed25519" : "EC P-384")!;
    const serverCert = issue(ca, serverCsr.pem, ["digital signature", "key encipherment", "server auth"]);
    const clientCert = issue(ca, clientCsr.pem, ["digital signature", "key encipherment", "client auth"]);
    for (const servername of ["localhost", undefined]) {
      const r = await handshake(
        { cert: serverCert.pem, key: serverCsr.keyPem, caPem: ca.certPem },
        { cert: clientCert.pem, key: clientCsr.keyPem, caPem: ca.certPem, ...(servername && { servername }) },
      );
      expect(r).toEqual({ ok: true, serverSawClient: `interop ${caType === "ed25519" ? "Ed25519" : "EC P-384"}` });
    }
  });

  it("refuses a client certificate issued by another CA", async () => {
    const serverCa = cas.get("p256")!;
    const otherCa = cas.get("p384")!;
    const server = csrs.get("EC P-256")!;
    const client = csrs.get("EC P-384")!;
    const r = await handshake(
      { cert: issue(serverCa, server.pem).pem, key: server.keyPem, caPem: serverCa.certPem },
      { cert: issue(otherCa, client.pem, ["digital signature", "client auth"]).pem, key: client.keyPem, caPem: serverCa.certPem, servername: "localhost" },
    );
    expect(r).toEqual({ ok: false, serverError: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
  });
});
