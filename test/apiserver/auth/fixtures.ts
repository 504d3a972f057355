// Builders for identity tests: users, RBAC objects, a static lister, the client CA options and client certificates.
import { groupNames, type GroupNames } from "../../../src/api/group.js";
import type { ApiObject, UserInfo } from "../../../src/api/meta.js";
import type { ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject } from "../../../src/api/types/rbac.js";
import type { RbacLister } from "../../../src/apiserver/auth/rbac.js";
import { caFromPem, type GeneratedCa } from "../../../src/pki/ca.js";
import { parseCsr } from "../../../src/pki/csr.js";
import { PlatformError } from "../../../src/errors.js";
import { Issuer } from "../../../src/pki/issue.js";
import { encodePem } from "../../../src/pki/pem.js";
import { resolveUsages } from "../../../src/pki/usages.js";
import { csr } from "../../fixtures/csr.js";
import type { AdmissionAttributes, AdmissionChain } from "../../../src/apiserver/auth/admission.js";
import { testCa, type TestCaOptions } from "../../fixtures/ca.js";

export const names: GroupNames = groupNames();
export const T0 = Date.UTC(2030, 0, 1);

export function user(o: Partial<UserInfo> & { username?: string } = {}): UserInfo {
  return { username: o.username ?? "bob", groups: o.groups ?? ["system:authenticated"], ...(o.uid && { uid: o.uid }), ...(o.extra && { extra: o.extra }) };
}

// --- RBAC objects ---

const rbacVersion = `${names.rbac}/v1`;

export function rule(o: Partial<PolicyRule> & { verbs: string[] }): PolicyRule {
  return { ...o };
}

export function clusterRole(name: string, rules: PolicyRule[]): ClusterRole {
  return { apiVersion: rbacVersion, kind: "ClusterRole", metadata: { name }, rules };
}

export function role(namespace: string, name: string, rules: PolicyRule[]): Role {
  return { apiVersion: rbacVersion, kind: "Role", metadata: { name, namespace }, rules };
}

export const userSubject = (name: string): Subject => ({ kind: "User", apiGroup: names.rbac, name });
export const groupSubject = (name: string): Subject => ({ kind: "Group", apiGroup: names.rbac, name });
export const saSubject = (namespace: string, name: string): Subject => ({ kind: "ServiceAccount", apiGroup: "", name, namespace });

export function clusterRoleBinding(name: string, roleName: string, subjects: Subject[], o: { kind?: string; apiGroup?: string } = {}): ClusterRoleBinding {
  return {
    apiVersion: rbacVersion,
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: o.apiGroup ?? names.rbac, kind: (o.kind ?? "ClusterRole") as "ClusterRole", name: roleName },
    subjects,
  };
}

export function roleBinding(namespace: string, name: string, ref: { kind: "Role" | "ClusterRole"; name: string }, subjects: Subject[]): RoleBinding {
  return { apiVersion: rbacVersion, kind: "RoleBinding", metadata: { name, namespace }, roleRef: { apiGroup: names.rbac, ...ref }, subjects };
}

/** A lister over mutable arrays; `bump()` after changing them. */
export class StaticLister implements RbacLister {
  #version = 1;
  constructor(
    readonly objects: { roles?: Role[]; clusterRoles?: ClusterRole[]; roleBindings?: RoleBinding[]; clusterRoleBindings?: ClusterRoleBinding[] } = {},
  ) {}
  static of(objects: readonly ApiObject[]): StaticLister {
    const by = (kind: string) => objects.filter((o) => o.kind === kind) as never[];
    return new StaticLister({ roles: by("Role"), clusterRoles: by("ClusterRole"), roleBindings: by("RoleBinding"), clusterRoleBindings: by("ClusterRoleBinding") });
  }
  roles = () => this.objects.roles ?? [];
  clusterRoles = () => this.objects.clusterRoles ?? [];
  roleBindings = () => this.objects.roleBindings ?? [];
  clusterRoleBindings = () => this.objects.clusterRoleBindings ?? [];
  version = () => this.#version;
  bump(): void {
    this.#version++;
  }
}

// --- certificates ---

/** The shared client CA of the identity tests (P-256, made at T0). */
export const CLIENT_CA: TestCaOptions = { commonName: "client CA" };

export interface CertOptions {
  readonly cn?: string;
  readonly o?: readonly string[];
  readonly usages?: readonly string[];
  readonly isCa?: boolean;
  /** Validity relative to T0, in seconds. */
  readonly from?: number;
  readonly to?: number;
  readonly issuer?: GeneratedCa | IssuedCa;
}

export interface IssuedCa {
  readonly certPem: string;
  readonly issuer: Issuer;
}

/** A certificate for a fresh CSR, issued by `issuer` (default the shared client CA). */
export async function issueCert(o: CertOptions = {}): Promise<{ pem: string; der: Uint8Array; keyPem: string }> {
  const request = await csr({ cn: o.cn ?? "bob", o: o.o ?? [], key: "p256" });
  const cert = (await issuerOf(o.issuer)).issue({
    csr: parseCsr(request.pem),
    profile: { usages: resolveUsages(o.usages ?? (o.isCa ? ["cert sign", "digital signature"] : ["digital signature", "client auth"])), isCa: o.isCa ?? false, includeSans: false },
    validity: { notBefore: new Date(T0 + (o.from ?? -300) * 1000), notAfter: new Date(T0 + (o.to ?? 86400) * 1000) },
  });
  return { pem: cert.pem, der: cert.der, keyPem: request.keyPem };
}

/** The Issuer of `parent`, a CA or an intermediate (default the shared client CA). */
async function issuerOf(parent: CertOptions["issuer"]): Promise<Issuer> {
  const ca = parent ?? (await testCa(CLIENT_CA));
  return "issuer" in ca ? ca.issuer : new Issuer(ca.ca);
}

/** An intermediate CA issued by `o.issuer` (default the shared client CA), able to issue further certificates. */
export async function intermediateCa(o: CertOptions = {}): Promise<IssuedCa & { der: Uint8Array }> {
  const request = await csr({ cn: o.cn ?? "intermediate", key: "p256", requestCa: true });
  const cert = (await issuerOf(o.issuer)).issue({
    csr: parseCsr(request.pem),
    profile: { usages: resolveUsages(o.usages ?? ["cert sign", "digital signature"]), isCa: true, includeSans: false },
    validity: { notBefore: new Date(T0 - 300_000), notAfter: new Date(T0 + (o.to ?? 365 * 86400) * 1000) },
  });
  const ca = caFromPem(cert.pem, request.keyPem);
  return { certPem: cert.pem, der: cert.der, issuer: new Issuer(ca) };
}

export const pemOf = (der: Uint8Array) => encodePem("CERTIFICATE", der);

/** Runs an admission chain and says what happened: "allowed", or "CODE: message" for a typed refusal. */
export async function admissionOutcome(chain: AdmissionChain, a: AdmissionAttributes, obj: ApiObject | undefined, old?: ApiObject): Promise<string> {
  try {
    await chain.admit(a, obj, old);
    return "allowed";
  } catch (err) {
    if (err instanceof PlatformError) return `${err.code}: ${err.message}`;
    throw err;
  }
}

/**
 * The PlatformError a promise rejects with; fails the test when it resolves or rejects with something else. An admission
 * chain that answered at once (undefined) admitted the write.
 */
export async function refusal(p: void | Promise<unknown>): Promise<PlatformError> {
  const err = await Promise.resolve(p).then(() => undefined, (e: unknown) => e);
  if (!(err instanceof PlatformError)) throw new Error(`expected a refusal, got ${String(err)}`);
  return err;
}
