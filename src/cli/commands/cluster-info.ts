// `platform-ca up --enable-bootstrap-token-auth` publishes cluster-info as kubeadm's init does: the kubeconfig a joining
// node reads without credentials (server and CA) in the public namespace, and the Role that lets system:anonymous get it.
import { hostname } from "node:os";
import { isDeepStrictEqual } from "node:util";
import { CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, CLUSTER_INFO_READER, clusterInfoKubeconfig } from "../../api/cluster-info.js";
import type { ApiObject } from "../../api/meta.js";
import { CORE_VERSION, type ConfigMap } from "../../api/types/core.js";
import { RBAC_VERSION } from "../../api/types/rbac.js";
import type { Component, ComponentContext } from "../../apiserver/bootstrap/run-server.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import type { ResourceClient } from "../../client/types.js";

/** Creates `obj`, or updates the existing object with `fix` when `same` says it differs. */
async function ensure<T extends ApiObject>(client: ResourceClient<T>, obj: T, same: (current: T) => boolean, fix: (current: T) => T): Promise<void> {
  const namespace = obj.metadata.namespace;
  try {
    await client.create(obj, { ...(namespace !== undefined && { namespace }) });
    return;
  } catch (err) {
    if (!isPlatformError(err, "ALREADY_EXISTS")) throw err;
  }
  const current = await client.get(obj.metadata.name!, { ...(namespace !== undefined && { namespace }) });
  if (!same(current)) await client.update(fix(current));
}

/**
 * The server's address for joining nodes: the bound one, or, bound on every interface, the host's name (which the
 * serving certificate names then; admin.conf's loopback address would send a remote node to itself).
 */
export function advertisedServer(bound: string): string {
  const url = new URL(bound);
  if (url.hostname === "0.0.0.0" || url.hostname === "[::]") url.hostname = hostname().toLowerCase();
  return url.origin;
}

/** Writes cluster-info (kept up to date with the server's address and CA at each start) and its reader's Role and binding. */
export async function publishClusterInfo(ctx: Pick<ComponentContext, "adminConfigPath" | "address" | "names">): Promise<string> {
  const [{ loadClientConfig }, { resolveRestConfig }, { createClient }] = await Promise.all([
    import("../../client/config-file.js"),
    import("../../client/resolve-config.js"),
    import("../../client/rest-client.js"),
  ]);
  const rest = await resolveRestConfig(await loadClientConfig({ explicitPath: ctx.adminConfigPath }), {}, { groupSuffix: ctx.names.suffix });
  // admin.conf's CA is the one that verifies this server: what a joining node must trust.
  const caPem = rest.tls.ca;
  if (caPem === undefined) throw new PlatformError("INTERNAL", `${ctx.adminConfigPath} holds no cluster CA to publish in cluster-info`);
  const client = createClient(rest);
  const namespace = ctx.names.bootstrapTokens.publicNamespace;
  try {
    const resource = <T extends ApiObject>(group: string, plural: string, namespaced = true) =>
      client.resource<T>({ group, version: group === "" ? CORE_VERSION : RBAC_VERSION, plural, namespaced });
    const rbac = `${ctx.names.rbac}/${RBAC_VERSION}`;
    await ensure(resource("", "namespaces", false), { apiVersion: CORE_VERSION, kind: "Namespace", metadata: { name: namespace } }, () => true, (c) => c);
    const kubeconfig = clusterInfoKubeconfig(advertisedServer(ctx.address), caPem);
    await ensure<ConfigMap>(
      resource("", "configmaps"),
      { apiVersion: CORE_VERSION, kind: "ConfigMap", metadata: { name: CLUSTER_INFO_NAME, namespace }, data: { [CLUSTER_INFO_KUBECONFIG_KEY]: kubeconfig } },
      (c) => c.data?.[CLUSTER_INFO_KUBECONFIG_KEY] === kubeconfig,
      // The signatures stay: the bootstrap signer replaces them once it sees the new content.
      (c) => ({ ...c, data: { ...c.data, [CLUSTER_INFO_KUBECONFIG_KEY]: kubeconfig } }),
    );
    const rules = [{ apiGroups: [""], resources: ["configmaps"], resourceNames: [CLUSTER_INFO_NAME], verbs: ["get"] }];
    const role = { apiVersion: rbac, kind: "Role", metadata: { name: CLUSTER_INFO_READER, namespace }, rules };
    await ensure(resource(ctx.names.rbac, "roles"), role as ApiObject, (c) => isDeepStrictEqual((c as typeof role).rules, rules), (c) => ({ ...c, rules }) as ApiObject);
    const subjects = [{ kind: "User", apiGroup: ctx.names.rbac, name: "system:anonymous" }];
    const binding = { apiVersion: rbac, kind: "RoleBinding", metadata: { name: CLUSTER_INFO_READER, namespace }, roleRef: { apiGroup: ctx.names.rbac, kind: "Role", name: CLUSTER_INFO_READER }, subjects };
    await ensure(resource(ctx.names.rbac, "rolebindings"), binding as ApiObject, (c) => isDeepStrictEqual((c as typeof binding).subjects, subjects), (c) => ({ ...c, subjects }) as ApiObject);
  } finally {
    client.close();
  }
  return `${namespace}/${CLUSTER_INFO_NAME}`;
}

/** The component `up` adds with `--enable-bootstrap-token-auth`; the bootstrap signer (in the controllers) signs what it writes. */
export const clusterInfoComponent: Component = {
  name: "cluster-info",
  async start(ctx) {
    const published = await publishClusterInfo(ctx);
    ctx.logger.info({ configMap: published }, "cluster-info published for bootstrap token discovery");
    return { stop: async () => {}, summary: `cluster-info ${published} (signed by bootstrap tokens with usage-bootstrap-signing; readable by system:anonymous)` };
  },
};
