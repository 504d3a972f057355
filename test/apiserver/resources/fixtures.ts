// Option-function builders for strategy tests: contexts, objects per kind, real certificates from openssl, and a registry-like runner.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupNames, type GroupNames } from "../../../src/api/group.js";
import type { ApiObject, UserInfo } from "../../../src/api/meta.js";
import type { FieldError, ResourceDefinition, StrategyContext } from "../../../src/apiserver/registry/strategy.js";
import { allResources } from "../../../src/apiserver/registry/resources/index.js";
import { opensslCa, opensslIssue } from "../../fixtures/openssl.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { csr, csrObject as sharedCsrObject, type CsrObjectOptions as SharedCsrObjectOptions, type CsrOptions } from "../../fixtures/csr.js";

export const names: GroupNames = groupNames();
export const NOW = new Date("2030-01-02T03:04:05.000Z");
export const NOW_TEXT = "2030-01-02T03:04:05Z";

export const ADMIN: UserInfo = { username: "alice", uid: "uid-alice", groups: ["admins", "system:authenticated"], extra: { scopes: ["a", "b"] } };

export function ctx(options: { now?: Date; user?: UserInfo | null; subresource?: string; names?: GroupNames } = {}): StrategyContext {
  const user = options.user === null ? undefined : (options.user ?? ADMIN);
  return { now: options.now ?? NOW, names: options.names ?? names, ...(user ? { user } : {}), ...(options.subresource ? { subresource: options.subresource } : {}) };
}

/** The definition of `kind` for the default suffix. */
export function definition(kind: string, groupNamesFor: GroupNames = names): ResourceDefinition {
  const def = allResources(groupNamesFor).find((d) => d.kind === kind);
  if (!def) throw new Error(`no definition for ${kind}`);
  return def;
}

export function object(def: ResourceDefinition, body: Record<string, unknown>, meta: Partial<ApiObject["metadata"]> = {}): ApiObject {
  const apiVersion = def.group ? `${def.group}/${def.version}` : def.version;
  return { apiVersion, kind: def.kind, metadata: { name: "x", ...(def.namespaced ? { namespace: "default" } : {}), ...meta }, ...structuredClone(body) };
}

/** Field and reason of each error, the form assertions compare. */
export const summary = (errors: readonly FieldError[]): string[] => errors.map((e) => `${e.field} ${e.reason}`);

/** What the registry does on create: prepare, then validate. Returns the prepared object and the errors. */
export function runCreate(def: ResourceDefinition, obj: ApiObject, c: StrategyContext = ctx()): { obj: ApiObject; errors: FieldError[] } {
  def.strategy.prepareForCreate(obj, c);
  return { obj, errors: def.strategy.validate(obj, c) };
}

/** What the registry does on update of the main resource or of a subresource. */
export function runUpdate(def: ResourceDefinition, next: ApiObject, previous: ApiObject, c: StrategyContext = ctx()): { obj: ApiObject; errors: FieldError[] } {
  const sub = c.subresource ? def.strategy.subresources?.[c.subresource] : undefined;
  if (c.subresource && !sub) throw new Error(`no subresource ${c.subresource}`);
  if (sub) {
    sub.prepareForUpdate(next, previous, c);
    return { obj: next, errors: sub.validateUpdate(next, previous, c) };
  }
  def.strategy.prepareForUpdate(next, previous, c);
  return { obj: next, errors: [...def.strategy.validate(next, c), ...def.strategy.validateUpdate(next, previous, c)] };
}

/** Creates `obj` and insists it is valid: the stored starting point of update tests. */
export function stored(def: ResourceDefinition, obj: ApiObject, c: StrategyContext = ctx()): ApiObject {
  const { errors } = runCreate(def, obj, c);
  if (errors.length > 0) throw new Error(`fixture is invalid: ${JSON.stringify(errors)}`);
  return obj;
}

export const b64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");

// --- CSR objects ---

export interface CsrObjectOptions extends Omit<SharedCsrObjectOptions, "request"> {
  /** Base64 of the request as JSON carries it, passed through unchecked; defaults to a real P-256 node request. */
  readonly request?: string;
}

let defaultRequest: Promise<string> | undefined;

/** Base64 of a real PEM CSR. */
export async function requestB64(options?: CsrOptions): Promise<string> {
  if (!options) {
    defaultRequest ??= csr({ cn: "system:node:a", o: ["system:nodes"] }).then((f) => b64(f.pem));
    return defaultRequest;
  }
  return b64((await csr(options)).pem);
}

/** The shared CSR object (fixtures/csr.ts) with the strategy tests' request: real by default, any base64 text when given. */
export async function csrObject(o: CsrObjectOptions = {}): Promise<ApiObject> {
  const { request, ...rest } = o;
  return sharedCsrObject({ ...rest, spec: { request: request ?? (await requestB64()), ...o.spec } });
}

export const condition = (type: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ type, status: "True", reason: "Test", ...extra });

// --- certificates from openssl ---

export interface PkiMaterial {
  readonly caPem: string;
  readonly otherCaPem: string;
  readonly leafPem: string;
  readonly csrPem: string;
}

let material: PkiMaterial | undefined;

/** A CA, a second CA, a leaf issued by the first, and a CSR, all made by the openssl command line. */
export function pki(): PkiMaterial {
  if (material) return material;
  const dir = tempDir("resources-pki-");
  const [ca, other] = [opensslCa(dir, "ca", 30), opensslCa(dir, "other", 30)];
  const leaf = opensslIssue(dir, "ca", "leaf", "/CN=leaf/O=system:nodes", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n");
  material = { caPem: ca.cert, otherCaPem: other.cert, leafPem: leaf.cert, csrPem: leaf.csr };
  return material;
}

/** A self-signed CA made by GnuTLS certtool. */
export function certtoolCa(): string {
  const dir = mkdtempSync(join(tmpdir(), "resources-certtool-"));
  try {
    const key = join(dir, "key.pem");
    const template = join(dir, "ca.tmpl");
    writeFileSync(template, 'cn = "certtool ca"\nca\ncert_signing_key\nexpiration_days = 30\n');
    execFileSync("certtool", ["--generate-privkey", "--key-type", "ecdsa", "--outfile", key], { stdio: ["ignore", "pipe", "pipe"] });
    return execFileSync("certtool", ["--generate-self-signed", "--load-privkey", key, "--template", template], { stdio: ["ignore", "pipe", "pipe"] }).toString();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A CSR made by python3's cryptography package. */
export function pythonCsr(): string {
  const program = [
    "from cryptography import x509",
    "from cryptography.hazmat.primitives import hashes, serialization",
    "from cryptography.hazmat.primitives.asymmetric import ec",
    "from cryptography.x509.oid import NameOID",
    "key = ec.generate_private_key(ec.SECP384R1())",
    "b = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'py')]))",
    "b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName('py.example')]), critical=False)",
    "print(b.sign(key, hashes.SHA384()).public_bytes(serialization.Encoding.PEM).decode(), end='')",
  ].join("\n");
  return execFileSync("python3", ["-c", program], { stdio: ["ignore", "pipe", "pipe"] }).toString();
}

/** The same PEM block with RFC 1421 headers inserted after the BEGIN line. */
export function withHeaders(pem: string): string {
  return pem.replace(/(-----BEGIN [A-Z ]+-----\n)/, "$1Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00000000000000000000000000000000\n\n");
}
