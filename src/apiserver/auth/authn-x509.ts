// Client-certificate authentication: the TLS peer chain verified against the client CA pool; CN is the user, O the groups.
import { Buffer } from "node:buffer";
import { X509Certificate } from "node:crypto";
import type { TLSSocket } from "node:tls";
import { invalidOption } from "../../errors.js";
import { readCertificateFacts } from "../../pki/ca.js";
import { DerReader } from "../../pki/der.js";
import { readName } from "../../pki/names.js";
import { decodePem } from "../../pki/pem.js";
import { revocationIdOf, revocationKey } from "../../pki/revocation-id.js";
import type { DistinguishedName } from "../../pki/types.js";
import { ExtKeyUsageOid } from "../../pki/usages.js";
import { addGroups, frozenUser, SYSTEM_AUTHENTICATED, type AuthnResult } from "./identity.js";

export interface X509AuthenticatorOptions {
  /**
   * PEM text of the CA certificates a client certificate must chain to (the apiserver-client signer's CAs).
   * A function is read on every request, so a rotated CA is picked up; its parse is cached per text.
   */
  readonly trustPool: string | readonly string[] | (() => string | readonly string[]);
  readonly clock: { now(): number };
  /** Longest accepted chain, leaf and intermediates (anchor excluded); default 5. */
  readonly maxChainLength?: number;
  /**
   * Revocation by issuer and serial (`revocationKey`): the refusal text for a revoked certificate. Asked at every
   * request, after the chain's verdict, so a revocation is never hidden by the verdict cache.
   */
  readonly revocation?: { check(key: string): string | undefined };
}

interface Parsed {
  readonly cert: X509Certificate;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly subjectDer: Uint8Array;
}

const CLIENT_AUTH = ExtKeyUsageOid.clientAuth;
const ANY_EKU = ExtKeyUsageOid.any;

// A TLS connection's peer chain cannot change once the handshake is done: the server disables renegotiation
// (http/app.ts), so the chain is read from OpenSSL once per connection rather than once per request. The server
// reads it at the handshake: node's read of the peer certificate clears OpenSSL's error queue, where a chain the
// TLS layer failed to verify (a signature by another key under a trusted issuer's name) leaves errors that node
// would otherwise report on the connection's next read (400 ERR_SSL_EVP_LIB instead of this authenticator's 401).
const chainsBySocket = new WeakMap<TLSSocket, Uint8Array[]>();

/** More than any accepted chain (maxChainLength is at most 16): a longer one is refused by its length either way. */
const MAX_PRESENTED = 17;

/**
 * The DER certificates a TLS client presented, leaf first; empty when it presented none. Read as X509Certificate
 * objects (the leaf and the chain it sent): `getPeerCertificate(true)` builds a JavaScript object of every field of
 * every certificate, and appends the server's own anchor, ~4–5× the CPU per connection (a node agent's LIST and
 * watch each open one). The anchor is found by the path checks below anyway.
 */
export function peerCertificateChain(socket: TLSSocket | undefined): Uint8Array[] {
  if (socket === undefined) return [];
  const known = chainsBySocket.get(socket);
  if (known !== undefined) return known;
  const out: Uint8Array[] = [];
  // The issuer links are the certificates the client sent after its leaf, in its order; the bound only guards them.
  for (let cert = socket.getPeerX509Certificate(); cert !== undefined && out.length < MAX_PRESENTED; cert = cert.issuerCertificate) out.push(new Uint8Array(cert.raw));
  chainsBySocket.set(socket, out);
  return out;
}

/**
 * One check of a chain's verdict, in the order the checks are made: the time-independent ones are decided once per
 * chain and trust pool (parsing, EKU, path building, signatures, subject), the validity windows at every request.
 */
type Step =
  | { readonly validity: Parsed; readonly what: string }
  | { readonly error: string }
  | { readonly user: Extract<AuthnResult, { user: unknown }>["user"]; readonly revocationKey: string };

interface Plan {
  readonly anchorsText: string;
  readonly steps: readonly Step[];
}

const PLAN_CACHE_LIMIT = 1024;

export class X509Authenticator {
  readonly #pool: () => string | readonly string[];
  readonly #clock: { now(): number };
  readonly #maxChain: number;
  readonly #revocation: X509AuthenticatorOptions["revocation"];
  #anchorsText: string | undefined;
  #anchors: readonly Parsed[] = [];
  /** The pool's value at the last read: the same strings again (a pool not rotated) skip the join and the text compare. */
  #lastPool: string | readonly string[] | undefined;
  /** Verdicts per presented chain (its DER), valid while the trust pool text is the same. */
  readonly #plans = new Map<string, Plan>();

  constructor(options: X509AuthenticatorOptions) {
    if (options?.trustPool === undefined) throw invalidOption("trustPool", "to be PEM text of CA certificates", options?.trustPool);
    if (typeof options.clock?.now !== "function") throw invalidOption("clock", "to have now()", options.clock);
    const max = options.maxChainLength ?? 5;
    if (!Number.isInteger(max) || max < 1 || max > 16) throw invalidOption("maxChainLength", "to be an integer 1–16", max);
    const pool = options.trustPool;
    this.#pool = typeof pool === "function" ? pool : () => pool;
    this.#clock = options.clock;
    this.#maxChain = max;
    this.#revocation = options.revocation;
    // Parsing is CPU only; failing here reports a broken pool at configuration time.
    this.#trustAnchors();
  }

  /** `undefined` when no certificate was presented; otherwise the user or why the chain is refused. */
  authenticate(chain: readonly Uint8Array[]): AuthnResult | undefined {
    if (chain.length === 0) return undefined;
    if (chain.length > this.#maxChain) return { error: `x509: the client presented ${chain.length} certificates, more than the limit of ${this.#maxChain}` };
    const anchors = this.#trustAnchors();
    const key = chainKey(chain);
    let plan = this.#plans.get(key);
    if (plan === undefined || plan.anchorsText !== this.#anchorsText) {
      plan = { anchorsText: this.#anchorsText!, steps: this.#plan(chain, anchors) };
      if (this.#plans.size >= PLAN_CACHE_LIMIT) this.#plans.delete(this.#plans.keys().next().value!);
      this.#plans.set(key, plan);
    }
    const now = this.#clock.now();
    for (const step of plan.steps) {
      if ("user" in step) {
        const revoked = this.#revocation?.check(step.revocationKey);
        return revoked === undefined ? { user: step.user } : { error: revoked };
      }
      if ("error" in step) return { error: step.error };
      const problem = validityProblem(step.validity, now, step.what);
      if (problem) return { error: problem };
    }
    return { error: "x509: certificate signed by unknown authority" };
  }

  /** The checks for one chain against the current anchors, in order; the first failing one is the answer. */
  #plan(chain: readonly Uint8Array[], anchors: readonly Parsed[]): Step[] {
    let certs: Parsed[];
    try {
      certs = chain.map(parse);
    } catch {
      return [{ error: "x509: the client certificate cannot be parsed" }];
    }
    const leaf = certs[0]!;
    const steps: Step[] = [{ validity: leaf, what: "certificate" }];
    if (!hasEku(leaf.cert, true)) return [...steps, { error: "x509: certificate specifies an incompatible key usage (client auth is required)" }];
    if (!this.#pathSteps(leaf, certs.slice(1), anchors, steps)) return steps;
    let subject: DistinguishedName;
    try {
      subject = readName(new DerReader(leaf.subjectDer), "subject");
    } catch {
      return [...steps, { error: "x509: the client certificate's subject cannot be read" }];
    }
    if (!subject.commonName) return [...steps, { error: "x509: the client certificate has no common name" }];
    // Every request of this chain shares the object.
    const user = frozenUser({ username: subject.commonName, groups: addGroups(subject.organizations, SYSTEM_AUTHENTICATED) });
    return [...steps, { user, revocationKey: revocationKey(revocationIdOf(new Uint8Array(leaf.cert.raw))) }];
  }

  /** Appends the path checks to `steps`; false when the path is refused (the refusal is the last step). */
  #pathSteps(leaf: Parsed, intermediates: readonly Parsed[], anchors: readonly Parsed[], steps: Step[]): boolean {
    const unused = [...intermediates];
    let current = leaf;
    for (let depth = 0; depth < this.#maxChain; depth++) {
      const anchor = anchors.find((a) => issued(a, current));
      if (anchor) {
        steps.push({ validity: anchor, what: "CA certificate" });
        return true;
      }
      const i = unused.findIndex((c) => c.cert.ca && issued(c, current));
      if (i < 0) break;
      const next = unused.splice(i, 1)[0]!;
      steps.push({ validity: next, what: "intermediate certificate" });
      if (!hasEku(next.cert, false)) {
        steps.push({ error: "x509: an intermediate certificate does not permit client auth" });
        return false;
      }
      current = next;
    }
    steps.push({ error: "x509: certificate signed by unknown authority" });
    return false;
  }

  #trustAnchors(): readonly Parsed[] {
    const value = this.#pool();
    if (this.#anchorsText !== undefined && samePool(value, this.#lastPool)) return this.#anchors;
    this.#lastPool = value;
    const text = typeof value === "string" ? value : value.join("\n");
    if (text === this.#anchorsText) return this.#anchors;
    let anchors: Parsed[] = [];
    let problem: string | undefined;
    try {
      anchors = decodePem(text, { label: "CERTIFICATE" }).map((b) => parse(b.der));
      if (anchors.length === 0) problem = "no certificate";
    } catch (err) {
      problem = (err as Error).message;
    }
    if (problem === undefined) {
      this.#anchors = anchors;
      this.#anchorsText = text;
    } else if (this.#anchorsText === undefined) {
      throw invalidOption("trustPool", "to be PEM text of at least one CA certificate", problem);
    }
    // A rotated pool that does not parse leaves the last good one in use rather than locking every client out.
    return this.#anchors;
  }
}

/** The key of a chain's verdict; a connection presents one array (peerCertificateChain), so it is built once per connection. */
const chainKeys = new WeakMap<readonly Uint8Array[], string>();

function chainKey(chain: readonly Uint8Array[]): string {
  let key = chainKeys.get(chain);
  if (key !== undefined) return key;
  key = "";
  for (const der of chain) key += `${der.length}:${Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString("latin1")}`;
  chainKeys.set(chain, key);
  return key;
}

/** Whether a pool read holds the same strings as the last: the unchanged pool's strings are the same objects, compared at once. */
function samePool(a: string | readonly string[], b: string | readonly string[] | undefined): boolean {
  if (a === b) return true;
  if (typeof a === "string" || typeof b !== "object") return false;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function parse(der: Uint8Array): Parsed {
  const cert = new X509Certificate(der);
  const facts = readCertificateFacts(new Uint8Array(cert.raw));
  return { cert, notBefore: facts.notBefore, notAfter: facts.notAfter, subjectDer: facts.subjectDer };
}

function issued(issuer: Parsed, subject: Parsed): boolean {
  try {
    return subject.cert.checkIssued(issuer.cert) && subject.cert.verify(issuer.cert.publicKey);
  } catch {
    return false;
  }
}

function validityProblem(p: Parsed, now: number, what = "certificate"): string | undefined {
  if (now < p.notBefore.getTime()) return `x509: ${what} is not yet valid: current time ${iso(now)} is before ${p.notBefore.toISOString()}`;
  if (now > p.notAfter.getTime()) return `x509: ${what} has expired: current time ${iso(now)} is after ${p.notAfter.toISOString()}`;
  return undefined;
}

/** The leaf must list client auth; an intermediate may also omit the extension (no restriction) or allow any. */
function hasEku(cert: X509Certificate, leaf: boolean): boolean {
  const ekus = cert.keyUsage as string[] | undefined;
  if (ekus === undefined || ekus.length === 0) return !leaf;
  return ekus.includes(CLIENT_AUTH) || ekus.includes(ANY_EKU);
}

const iso = (ms: number) => new Date(ms).toISOString();
