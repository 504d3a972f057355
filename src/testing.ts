// `platform-ca/testing`: a throw-away CA for other projects' test suites, issuing through the product's real signers; audit policy checks.
import { DEFAULT_USAGES, type LeafKind } from "./config/pki-manifest.js";
import { Buffer } from "node:buffer";
import { X509Certificate } from "node:crypto";
import { invalidOption, PlatformError } from "./errors.js";
import { generateCa } from "./pki/ca.js";
import { parseCsr } from "./pki/csr.js";
import type { KeyType } from "./pki/keys.js";
import type { CaKeyPair } from "./pki/types.js";
import { createBuiltinSigners } from "../signers/builtins.js";
import { parsePolicy } from "../signers/policy-schema.js";
import { parsePolicyText } from "../signers/policy.js";
import { createPolicySigner } from "../signers/policy-signer.js";
import { SignerRegistry } from "../signers/registry.js";
import type { Signer } from "../signers/signer.js";
import { ensureDir, pairPaths, writePair } from "./pki/files.js";
import { mintLeaf } from "./pki/leaf.js";
import { signWith } from "./devpki/signer-factory.js";
import { builtinSignerNames } from "../signers/signer-name.js";
import { decodePem, encodePem } from "./pki/pem.js";
import { buildCrl, crlIssuerFromCa, type Crl, type CrlEntry } from "./pki/crl.js";
import { revocationIdOf, type RevocationId } from "./pki/revocation-id.js";
import { isRevocationReason, REVOCATION_REASONS, type RevocationReason } from "./api/revocation.js";

export type { Signer } from "../signers/signer.js";
export type { KeyType } from "./pki/keys.js";
export type { Crl } from "./pki/crl.js";
export type { RevocationReason } from "./api/revocation.js";
// Audit policies under test: what a policy records of a request, and a sink that keeps events (createApiServer's `audit`).
export { whatWouldBeAudited, type AuditedRequest, type AuditOutcome } from "./audit/what-would-be-audited.js";
export { MemoryAuditSink } from "./audit/memory-sink.js";
export type { AuditEvent } from "./audit/event.js";
// A test OIDC issuer for AuthenticationConfiguration files: HTTPS on loopback, discovery, JWKS, minted tokens, key rotation.
export { startTestOidcIssuer, TEST_ISSUER_ALGORITHMS, type TestOidcIssuer, type TestOidcIssuerOptions, type MintOptions, type TestIssuerAlgorithm } from "./testing/oidc-issuer.js";
// A webhook server (authorization, admission, audit) for tests of webhook configuration files.
export { startTestWebhookServer, reviewAnswer, type TestWebhookServer, type TestWebhookServerOptions, type DecideFunction, type WebhookBehaviour, type RecordedWebhookRequest } from "./testing/webhook-server.js";

export interface TestAuthorityOptions {
  /** CA common name (default "platform-ca test CA"). */
  readonly commonName?: string;
  /** CA key type (default p256: fast). */
  readonly keyType?: KeyType;
  /** CA lifetime in seconds (default one year). */
  readonly lifetimeSeconds?: number;
  /** Clock for the CA and every certificate (default the wall clock); pass a fake one to test expiry. */
  readonly now?: () => Date;
  /** API group suffix of the built-in signer names (default platform.io). */
  readonly groupSuffix?: string;
  /** Custom signer policies (YAML text or a parsed document), available to signCsr and signer(). */
  readonly policies?: readonly (string | Record<string, unknown>)[];
}

export interface IssueOptions {
  readonly cn?: string;
  readonly o?: readonly string[];
  readonly ou?: readonly string[];
  readonly dns?: readonly string[];
  readonly ip?: readonly string[];
  readonly email?: readonly string[];
  readonly uri?: readonly string[];
  /** Default one day. */
  readonly lifetimeSeconds?: number;
  /** Default p256. */
  readonly keyType?: KeyType;
  /** Seed usage strings; default the typical serving or client set. */
  readonly usages?: readonly string[];
}

export interface IssuedPair {
  /** The leaf certificate alone. */
  readonly certPem: string;
  /** PKCS#8 private key of the leaf. */
  readonly keyPem: string;
  /** Leaf then intermediates: what a TLS peer presents. */
  readonly chainPem: string;
  readonly caPem: string;
  /** Ready for `https.createServer(tls)`, `tls.connect({ ...tls })`. */
  readonly tls: { readonly cert: string; readonly key: string; readonly ca: string };
}

export interface SignCsrOptions {
  /** Default the built-in legacy-unknown signer, which accepts any subject and known usages. */
  readonly signerName?: string;
  readonly usages: readonly string[];
  readonly expirationSeconds?: number;
  readonly username?: string;
  readonly groups?: readonly string[];
}

export interface TestAuthority {
  readonly caPem: string;
  /** The CA key pair, for code that takes a CaKeyPair (signers, the controller). */
  readonly ca: CaKeyPair;
  /** A serving certificate; with no names, for localhost, 127.0.0.1 and ::1. */
  issueServer(options?: IssueOptions): Promise<IssuedPair>;
  /** A client certificate for `cn` (and groups as `o`). */
  issueClient(options: IssueOptions & { readonly cn: string }): Promise<IssuedPair>;
  /** Signs a CSR through a built-in or custom signer's rules; a refusal throws SIGNER_REJECTED with the reason. */
  signCsr(csrPem: string, options: SignCsrOptions): Promise<string>;
  /** The signer registered under `name` (built-in or from `policies`), backed by this CA. */
  signer(name: string): Signer;
  /**
   * Revokes a certificate of this CA (PEM, DER, or an IssuedPair) with an RFC 5280 reason (default unspecified); it
   * is listed by every later crl(). A certificate of another CA, an unknown reason or a second revocation throws.
   */
  revoke(certificate: string | Uint8Array | Pick<IssuedPair, "certPem">, reason?: RevocationReason): void;
  /**
   * A CRL of this CA (DER and PEM) listing the revoked certificates that have not expired, thisUpdate now,
   * nextUpdate after `nextUpdateSeconds` (default one day), and a CRL number one higher than the last one.
   */
  crl(options?: { readonly nextUpdateSeconds?: number }): Promise<Crl>;
  /** Writes ca.crt (0644) and ca.key (0600) into `dir`; returns their paths. */
  writeTo(dir: string): Promise<{ readonly certFile: string; readonly keyFile: string }>;
}

const DEFAULT_CA_LIFETIME = 365 * 86_400;
const DEFAULT_LEAF_LIFETIME = 86_400;

/** Creates a CA in memory (nothing is written unless writeTo is called). */
export async function createTestAuthority(options: TestAuthorityOptions = {}): Promise<TestAuthority> {
  const clock = options.now ?? (() => new Date());
  if (typeof clock !== "function") throw invalidOption("now", "to be a function returning a Date", typeof clock);
  const lifetimeSeconds = options.lifetimeSeconds ?? DEFAULT_CA_LIFETIME;
  const made = await generateCa({ commonName: options.commonName ?? "platform-ca test CA", keyType: options.keyType ?? "p256", lifetimeSeconds, now: clock() });
  const { ca } = made;
  const backing = { ca, now: clock, maxDurationSeconds: lifetimeSeconds };
  const registry = new SignerRegistry(createBuiltinSigners({ ...backing, ...(options.groupSuffix !== undefined && { groupSuffix: options.groupSuffix }) }));
  for (const policy of options.policies ?? []) {
    registry.register(createPolicySigner(typeof policy === "string" ? parsePolicyText(policy) : parsePolicy(policy), backing));
  }
  const legacyUnknown = builtinSignerNames(options.groupSuffix).legacyUnknown;

  const issue = async (kind: LeafKind, o: IssueOptions): Promise<IssuedPair> => {
    const leaf = await mintLeaf({
      ...(o.cn !== undefined && { commonName: o.cn }),
      organizations: o.o ?? [],
      organizationalUnits: o.ou ?? [],
      dns: o.dns ?? [],
      ip: o.ip ?? [],
      email: o.email ?? [],
      uri: o.uri ?? [],
      keyType: o.keyType ?? "p256",
      usages: o.usages ?? DEFAULT_USAGES[kind],
      lifetimeSeconds: o.lifetimeSeconds ?? DEFAULT_LEAF_LIFETIME,
      ca,
      now: clock(),
    });
    const certPem = encodePem("CERTIFICATE", decodePem(leaf.certPem)[0]!.der);
    return { certPem, keyPem: leaf.keyPem, chainPem: leaf.certPem, caPem: ca.certPem, tls: { cert: leaf.certPem, key: leaf.keyPem, ca: ca.certPem } };
  };

  const revoked = new Map<string, { readonly id: RevocationId; readonly entry: CrlEntry }>();
  let crlNumber = 0;

  return {
    caPem: ca.certPem,
    ca,
    revoke(certificate, reason = "unspecified") {
      if (!isRevocationReason(reason)) throw invalidOption("reason", `to be one of ${REVOCATION_REASONS.join(", ")}`, reason);
      const der =
        certificate instanceof Uint8Array ? certificate : decodePem(typeof certificate === "string" ? certificate : certificate?.certPem, { label: "CERTIFICATE" })[0]?.der;
      if (der === undefined) throw invalidOption("certificate", "to be a certificate (PEM, DER or an issued pair)", certificate);
      const id = revocationIdOf(der);
      // Two test CAs share a name: the signature, not the issuer name, says whose certificate it is.
      if (Buffer.compare(Buffer.from(id.issuerDer), Buffer.from(ca.subjectDer)) !== 0 || !new X509Certificate(der).verify(ca.publicKey)) {
        throw new PlatformError("INVALID_ARGUMENT", "the certificate was not issued by this test CA");
      }
      if (revoked.has(id.serialHex)) throw new PlatformError("CONFLICT", `certificate serial ${id.serialHex} is already revoked`);
      revoked.set(id.serialHex, { id, entry: { serial: id.serialContents, revocationDate: clock(), reason } });
    },
    async crl(o = {}) {
      const seconds = o.nextUpdateSeconds ?? DEFAULT_LEAF_LIFETIME;
      if (!Number.isInteger(seconds) || seconds < 1) throw invalidOption("nextUpdateSeconds", "to be a whole number ≥ 1", seconds);
      const now = clock();
      // Expired certificates leave the list (RFC 5280 §3.3): they are refused for their dates anyway.
      const entries = [...revoked.values()].filter((r) => r.id.notAfter.getTime() >= now.getTime()).map((r) => r.entry);
      return buildCrl(crlIssuerFromCa(ca), { thisUpdate: now, nextUpdate: new Date(now.getTime() + seconds * 1000), crlNumber: ++crlNumber, entries });
    },
    issueServer(o = {}) {
      const named = (o.dns?.length ?? 0) + (o.ip?.length ?? 0) > 0;
      const withNames = named ? o : { ...o, dns: ["localhost"], ip: ["127.0.0.1", "::1"] };
      return issue("server", { ...withNames, cn: o.cn ?? withNames.dns?.[0] ?? withNames.ip?.[0] });
    },
    issueClient(o) {
      if (typeof o?.cn !== "string" || o.cn.length === 0) return Promise.reject(invalidOption("cn", "to be a non-empty string", o?.cn));
      return issue("client", o);
    },
    async signCsr(csrPem, o) {
      const signer = registry.get(o.signerName ?? legacyUnknown);
      const request = {
        signerName: signer.signerName,
        csr: parseCsr(csrPem),
        usages: o.usages,
        ...(o.expirationSeconds !== undefined && { expirationSeconds: o.expirationSeconds }),
        ...(o.username !== undefined && { username: o.username }),
        ...(o.groups !== undefined && { groups: o.groups }),
      };
      return signWith(signer, request, clock());
    },
    signer: (name) => registry.get(name),
    async writeTo(dir) {
      await ensureDir(dir);
      const paths = pairPaths(dir, "ca");
      await writePair(paths, made.certPem, made.keyPem);
      return { certFile: paths.cert, keyFile: paths.key };
    },
  };
}
