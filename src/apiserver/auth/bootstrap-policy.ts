// The RBAC objects every server starts with: cluster-admin, the controller and node-agent roles, and what all users may read.
import type { GroupNames } from "../../api/group.js";
import type { ApiObject } from "../../api/meta.js";
import type { ClusterRole, ClusterRoleBinding, PolicyRule, Subject } from "../../api/types/rbac.js";
import { isPlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { SYSTEM_AUTHENTICATED, SYSTEM_MASTERS, SYSTEM_UNAUTHENTICATED } from "./identity.js";

export const CLUSTER_ADMIN = "cluster-admin";
export const CONTROLLER_ROLE = "platform-ca:controller";
export const NODEAGENT_BOOTSTRAPPER_ROLE = "platform-ca:nodeagent-bootstrapper";
export const NODEAGENT_SELFNODECLIENT_ROLE = "platform-ca:nodeagent-selfnodeclient";
export const BASIC_USER_ROLE = "system:basic-user";
export const DISCOVERY_ROLE = "system:discovery";
export const PUBLIC_INFO_ROLE = "system:public-info-viewer";

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

/** The bootstrap ClusterRoles and ClusterRoleBindings for one group suffix. */
export function bootstrapPolicy(names: GroupNames): BootstrapPolicy {
  const cert = names.certificates;
  const s = names.signers;
  const meta = (name: string) => ({
    name,
    labels: { [`${names.suffix}/bootstrapping`]: "rbac-defaults" },
    annotations: { [`${names.rbac}/autoupdate`]: "true" },
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
      { apiGroups: ["", names.events], resources: ["events"], verbs: ["create", "patch", "update"] },
      { apiGroups: [names.coordination], resources: ["leases"], verbs: ["get", "create", "update"] },
      { apiGroups: [names.authorization], resources: ["subjectaccessreviews"], verbs: ["create"] },
    ]),
    role(NODEAGENT_BOOTSTRAPPER_ROLE, [
      { apiGroups: [cert], resources: ["certificatesigningrequests"], verbs: ["create", ...READ] },
      { apiGroups: [cert], resources: ["certificatesigningrequests/nodeclient"], verbs: ["create"] },
    ]),
    // Nodes renew their own client certificates: they create (and watch) CSRs, and selfnodeclient lets the approver
    // approve a request whose subject is the node itself.
    role(NODEAGENT_SELFNODECLIENT_ROLE, [
      { apiGroups: [cert], resources: ["certificatesigningrequests"], verbs: ["create", ...READ] },
      { apiGroups: [cert], resources: ["certificatesigningrequests/selfnodeclient"], verbs: ["create"] },
    ]),
    // Seed 000 §2 rule 1: every authenticated user (service accounts included) reads trust bundles.
    role(BASIC_USER_ROLE, [
      { apiGroups: [names.authentication], resources: ["selfsubjectreviews"], verbs: ["create"] },
      { apiGroups: [cert], resources: ["clustertrustbundles"], verbs: READ },
    ]),
    role(DISCOVERY_ROLE, [{ nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/"], verbs: ["get"] }]),
    role(PUBLIC_INFO_ROLE, [{ nonResourceURLs: ["/healthz", "/livez", "/readyz", "/version", "/version/"], verbs: ["get"] }]),
  ];
  const clusterRoleBindings = [
    binding(CLUSTER_ADMIN, [group(SYSTEM_MASTERS)]),
    binding(CONTROLLER_ROLE, [
      { kind: "User", apiGroup: names.rbac, name: CONTROLLER_USER },
      { kind: "ServiceAccount", apiGroup: "", ...CONTROLLER_SERVICE_ACCOUNT },
    ]),
    binding(NODEAGENT_BOOTSTRAPPER_ROLE, [group(BOOTSTRAPPERS_GROUP)]),
    binding(NODEAGENT_SELFNODECLIENT_ROLE, [group(NODES_GROUP)]),
    binding(BASIC_USER_ROLE, [group(SYSTEM_AUTHENTICATED)]),
    binding(DISCOVERY_ROLE, [group(SYSTEM_AUTHENTICATED)]),
    binding(PUBLIC_INFO_ROLE, [group(SYSTEM_AUTHENTICATED), group(SYSTEM_UNAUTHENTICATED)]),
  ];
  return { clusterRoles, clusterRoleBindings };
}

/** Creates `obj`; fails with ALREADY_EXISTS when it exists. */
export type BootstrapCreate = (obj: ApiObject) => Promise<unknown>;

/**
 * Creates the bootstrap objects that do not exist yet (roles before bindings); existing ones are left as an
 * administrator may have changed them. Returns the `Kind/name` of each object created.
 */
export async function applyBootstrapPolicy(names: GroupNames, create: BootstrapCreate, logger: Logger = silentLogger()): Promise<string[]> {
  const { clusterRoles, clusterRoleBindings } = bootstrapPolicy(names);
  const created: string[] = [];
  for (const obj of [...clusterRoles, ...clusterRoleBindings]) {
    try {
      await create(structuredClone(obj));
      created.push(`${obj.kind}/${obj.metadata.name}`);
    } catch (err) {
      if (!isPlatformError(err, "ALREADY_EXISTS")) throw err;
    }
  }
  if (created.length > 0) logger.info({ created }, "bootstrap RBAC policy created");
  return created;
}
