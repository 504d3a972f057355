// The RBAC objects every server starts with: cluster-admin, the controller and node-agent roles, monitoring, and what all users may read.
import type { GroupNames } from "../../api/group.js";
import type { ApiObject } from "../../api/meta.js";
import type { ClusterRole, ClusterRoleBinding, PolicyRule, Subject } from "../../api/types/rbac.js";
import { isDeepStrictEqual } from "node:util";
import { isPlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { SYSTEM_AUTHENTICATED, SYSTEM_MASTERS, SYSTEM_UNAUTHENTICATED } from "./identity.js";

export const CLUSTER_ADMIN = "cluster-admin";
export const CONTROLLER_ROLE = "platform-ca:controller";
export const BASIC_USER_ROLE = "system:basic-user";
export const DISCOVERY_ROLE = "system:discovery";
export const PUBLIC_INFO_ROLE = "system:public-info-viewer";
/** Reads /metrics and every health check (upstream's role and group of the same name). */
export const MONITORING_ROLE = "system:monitoring";
export const MONITORING_GROUP = "system:monitoring";

/** Who the controller runs as: a client certificate with this CN, or the ServiceAccount below. */
export const CONTROLLER_USER = "system:platform-ca:controller";
export const CONTROLLER_SERVICE_ACCOUNT = { namespace: "platform-system", name: "platform-ca-controller" } as const;
/** Node agents asking for their first client certificate authenticate in this group (bootstrap tokens). */
export const BOOTSTRAPPERS_GROUP = "system:bootstrappers";
export const NODES_GROUP = "system:nodes";

const READ = ["get", "list", "watch"];

export interface BootstrapPolicy {
  readonly clusterRoles: readonly ClusterRole[];
  readonly clusterRoleBindings: readonly ClusterRoleBinding[];
}

/** The bootstrap ClusterRoles and ClusterRoleBindings for one group suffix and its naming profile. */
export function bootstrapPolicy(names: GroupNames): BootstrapPolicy {
  const cert = names.certificates;
  const s = names.signers;
  const meta = (name: string) => ({
    name,
    labels: { [names.bootstrappingLabel]: "rbac-defaults" },
    annotations: { [names.autoupdateAnnotation]: "true" },
  });
  const role = (name: string, rules: PolicyRule[]): ClusterRole => ({ apiVersion: `${names.rbac}/v1`, kind: "ClusterRole", metadata: meta(name), rules });
  const binding = (name: string, subjects: Subject[]): ClusterRoleBinding => ({
    apiVersion: `${names.rbac}/v1`,
    kind: "ClusterRoleBinding",
    metadata: meta(name),
    roleRef: { apiGroup: names.rbac, kind: "ClusterRole", name },
    subjects,
  });
  const group = (name: string): Subject => ({ kind: "Group", apiGroup: names.rbac, name });

  const clusterRoles = [
    role(CLUSTER_ADMIN, [
      { apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
      { nonResourceURLs: ["*"], verbs: ["*"] },
    ]),
    role(CONTROLLER_ROLE, [
      // delete: the cleaner removes old requests.
      { apiGroups: [cert], resources: ["certificatesigningrequests"], verbs: [...READ, "delete"] },
      { apiGroups: [cert], resources: ["certificatesigningrequests/approval", "certificatesigningrequests/status"], verbs: ["update", "patch"] },
      { apiGroups: [cert], resources: ["signers"], resourceNames: [s.apiserverClient, s.nodeagentClient, s.nodeagentServing, s.legacyUnknown], verbs: ["approve"] },
      // Custom signers are configured at run time, so signing and attesting are not limited to the built-in names.
      { apiGroups: [cert], resources: ["signers"], verbs: ["sign", "attest"] },
      { apiGroups: [cert], resources: ["clustertrustbundles"], verbs: [...READ, "create", "update", "patch", "delete"] },
      // The CRL publisher lists revocations by serial.
      { apiGroups: [cert], resources: ["certificaterevocations"], verbs: READ },
      { apiGroups: ["", names.events], resources: ["events"], verbs: ["create", "patch", "update"] },
      { apiGroups: [names.coordination], resources: ["leases"], verbs: ["get", "create", "update"] },
      // The controllers' own /metrics delegates authentication and authorization to this server, as upstream's
      // controller manager does (system:auth-delegator).
      { apiGroups: [names.authentication], resources: ["tokenreviews"], verbs: ["create"] },
      { apiGroups: [names.authorization], resources: ["subjectaccessreviews"], verbs: ["create"] },
      // The service-account controller: it watches namespaces and `default` ServiceAccounts, and creates the missing ones;
      // the token controller reads every ServiceAccount (get: one its cache has not seen yet).
      { apiGroups: [""], resources: ["namespaces"], verbs: ["list", "watch"] },
      { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["get", "list", "watch", "create"] },
      // The token controller fills token Secrets, and deletes those whose ServiceAccount is gone.
      { apiGroups: [""], resources: ["secrets"], verbs: ["list", "watch", "update", "delete"] },
      // The root CA publisher's ConfigMap in every namespace.
      { apiGroups: [""], resources: ["configmaps"], verbs: ["list", "watch", "create", "update"] },
      // The aggregation controller writes the rules of aggregated ClusterRoles: rules it does not hold itself, so it
      // needs escalate (as upstream's clusterrole-aggregation-controller).
      { apiGroups: [names.rbac], resources: ["clusterroles"], verbs: ["list", "watch", "update", "escalate"] },
    ]),
    role(names.roles.nodeClient, [
      { apiGroups: [cert], resources: ["certificatesigningrequests"], verbs: ["create", ...READ] },
      { apiGroups: [cert], resources: ["certificatesigningrequests/nodeclient"], verbs: ["create"] },
    ]),
    // Nodes renew their own client certificates: they create (and watch) CSRs, and selfnodeclient lets the approver
    // approve a request whose subject is the node itself.
    role(names.roles.selfNodeClient, [
      { apiGroups: [cert], resources: ["certificatesigningrequests"], verbs: ["create", ...READ] },
      { apiGroups: [cert], resources: ["certificatesigningrequests/selfnodeclient"], verbs: ["create"] },
    ]),
    // Seed 000 §2 rule 1: every authenticated user (service accounts included) reads trust bundles.
    role(BASIC_USER_ROLE, [
      { apiGroups: [names.authentication], resources: ["selfsubjectreviews"], verbs: ["create"] },
      { apiGroups: [names.authorization], resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], verbs: ["create"] },
      { apiGroups: [cert], resources: ["clustertrustbundles"], verbs: READ },
    ]),
    role(DISCOVERY_ROLE, [{ nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/"], verbs: ["get"] }]),
    role(PUBLIC_INFO_ROLE, [{ nonResourceURLs: ["/healthz", "/livez", "/readyz", "/version", "/version/"], verbs: ["get"] }]),
    role(MONITORING_ROLE, [{ nonResourceURLs: ["/metrics", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"], verbs: ["get"] }]),
    ...userFacingRoles(names, role),
    // Upstream's, not bound: what kubeadm binds to its bootstrap tokens, and approval for one built-in signer each
    // (with update on certificatesigningrequests/approval, which these do not grant, a user may approve for it).
    role(names.roles.nodeBootstrapper, [{ apiGroups: [cert], resources: ["certificatesigningrequests"], verbs: ["create", ...READ] }]),
    ...Object.values(s).map((signer) =>
      role(`${names.roles.signerApproverPrefix}${signer.slice(signer.indexOf("/") + 1)}-approver`, [{ apiGroups: [cert], resources: ["signers"], resourceNames: [signer], verbs: ["approve"] }]),
    ),
  ];
  const clusterRoleBindings = [
    binding(CLUSTER_ADMIN, [group(SYSTEM_MASTERS)]),
    binding(CONTROLLER_ROLE, [
      { kind: "User", apiGroup: names.rbac, name: CONTROLLER_USER },
      { kind: "ServiceAccount", apiGroup: "", ...CONTROLLER_SERVICE_ACCOUNT },
    ]),
    binding(names.roles.nodeClient, [group(BOOTSTRAPPERS_GROUP)]),
    binding(names.roles.selfNodeClient, [group(NODES_GROUP)]),
    binding(BASIC_USER_ROLE, [group(SYSTEM_AUTHENTICATED)]),
    binding(DISCOVERY_ROLE, [group(SYSTEM_AUTHENTICATED)]),
    binding(PUBLIC_INFO_ROLE, [group(SYSTEM_AUTHENTICATED), group(SYSTEM_UNAUTHENTICATED)]),
    binding(MONITORING_ROLE, [group(MONITORING_GROUP)]),
  ];
  return { clusterRoles, clusterRoleBindings };
}

/**
 * Upstream's user-facing roles, for the resources served here: `view` (read, not Secrets), `edit` (also write, and
 * Secrets), `admin` (also Roles and RoleBindings), each aggregated from the ClusterRoles labelled
 * `rbac.authorization.<suffix>/aggregate-to-<name>: "true"` (the clusterrole-aggregation controller computes their
 * rules), `view` aggregating into `edit` and `edit` into `admin`. Bound with a RoleBinding they grant that much in one
 * namespace; other ClusterRoles join them by carrying the label.
 */
function userFacingRoles(names: GroupNames, role: (name: string, rules: PolicyRule[]) => ClusterRole): ClusterRole[] {
  const WRITE = ["create", "delete", "deletecollection", "patch", "update"];
  const label = (to: string) => ({ [`${names.rbac}/aggregate-to-${to}`]: "true" });
  const labelled = (r: ClusterRole, labels: Record<string, string>): ClusterRole => ({ ...r, metadata: { ...r.metadata, labels: { ...r.metadata.labels, ...labels } } });
  const aggregated = (name: string, into?: string): ClusterRole => ({
    ...labelled(role(name, []), into ? label(into) : {}),
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: label(name) }] },
  });
  return [
    aggregated("admin"),
    aggregated("edit", "admin"),
    aggregated("view", "edit"),
    labelled(
      role("system:aggregate-to-admin", [{ apiGroups: [names.rbac], resources: ["roles", "rolebindings"], verbs: [...READ, ...WRITE] }]),
      label("admin"),
    ),
    labelled(
      role("system:aggregate-to-edit", [
        { apiGroups: [""], resources: ["configmaps", "pods", "secrets", "serviceaccounts"], verbs: WRITE },
        { apiGroups: [""], resources: ["secrets"], verbs: READ },
        { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] },
        { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"] },
      ]),
      label("edit"),
    ),
    labelled(
      role("system:aggregate-to-view", [
        { apiGroups: [""], resources: ["configmaps", "events", "pods", "pods/status", "serviceaccounts"], verbs: READ },
        { apiGroups: [""], resources: ["namespaces"], verbs: READ },
        { apiGroups: [names.events], resources: ["events"], verbs: READ },
        { apiGroups: [names.apps], resources: ["controllerrevisions"], verbs: READ },
      ]),
      label("view"),
    ),
  ];
}

/** Where the bootstrap policy is written: the API server's registry, or a map in tests. */
export interface BootstrapWriter {
  /** Creates `obj`; fails with ALREADY_EXISTS when it exists. */
  create(obj: ApiObject): Promise<unknown>;
  /**
   * Replaces the stored object of `obj`'s kind and name with `change(stored)` (retried on a concurrent write); a
   * `change` that returns its argument unchanged writes nothing.
   */
  modify(obj: ApiObject, change: (stored: ApiObject) => ApiObject): Promise<unknown>;
}

/**
 * `stored` with what `wanted` grants and it lacks: the rules of a ClusterRole, the subjects of a ClusterRoleBinding
 * (upstream's reconciliation at start: permissions are added, never removed). Returned unchanged when an
 * administrator set the autoupdate annotation to "false", when the role is aggregated (its rules are computed), when a
 * binding refers to another role, or when nothing is missing.
 */
export function withMissingGrants(names: GroupNames, stored: ApiObject, wanted: ApiObject): ApiObject {
  if (stored.metadata.annotations?.[names.autoupdateAnnotation] === "false") return stored;
  const field = wanted.kind === "ClusterRole" ? "rules" : "subjects";
  if (wanted.kind === "ClusterRole" && stored["aggregationRule"] !== undefined) return stored;
  if (wanted.kind === "ClusterRoleBinding" && !isDeepStrictEqual(stored["roleRef"], wanted["roleRef"])) return stored;
  const have = Array.isArray(stored[field]) ? (stored[field] as unknown[]) : [];
  const missing = (wanted[field] as unknown[]).filter((w) => !have.some((h) => isDeepStrictEqual(h, w)));
  return missing.length === 0 ? stored : { ...stored, [field]: [...have, ...missing] };
}

/**
 * Creates the bootstrap objects that do not exist yet (roles before bindings) and adds to existing ones the rules
 * and subjects they lack (a release that grants more reaches data directories made by an older one). Nothing is
 * removed: what an administrator added stays, and one who wants an object left alone sets its
 * autoupdate annotation (`rbac.authorization.<domain>/autoupdate`) to "false". Returns the `Kind/name` of each object created or completed.
 */
export async function applyBootstrapPolicy(names: GroupNames, writer: BootstrapWriter, logger: Logger = silentLogger()): Promise<{ created: string[]; updated: string[] }> {
  const { clusterRoles, clusterRoleBindings } = bootstrapPolicy(names);
  const created: string[] = [];
  const updated: string[] = [];
  for (const obj of [...clusterRoles, ...clusterRoleBindings]) {
    const id = `${obj.kind}/${obj.metadata.name}`;
    try {
      await writer.create(structuredClone(obj));
      created.push(id);
      continue;
    } catch (err) {
      if (!isPlatformError(err, "ALREADY_EXISTS")) throw err;
    }
    let changed = false;
    await writer.modify(obj, (stored) => {
      const next = withMissingGrants(names, stored, obj as unknown as ApiObject);
      changed = next !== stored;
      return next;
    });
    if (changed) updated.push(id);
  }
  if (created.length > 0) logger.info({ created }, "bootstrap RBAC policy created");
  if (updated.length > 0) logger.info({ updated }, "bootstrap RBAC policy completed with the rules and subjects it lacked");
  return { created, updated };
}
