// Admission (validating): RBAC escalation prevention — nobody grants, through a role or a binding, what they do not hold.
//
// As upstream: writing a Role/ClusterRole needs `escalate` on it, or holding every permission in its rules; writing a
// RoleBinding/ClusterRoleBinding needs `bind` on the referenced role, or holding every permission in that role.
// "Holding" is checked through the authorizer, one request per (verb, group, resource, name) of each rule, with
// wildcards asked literally: a rule with verb `*` is held only by someone whose own rule says `*`. That is stricter
// than upstream's rule-coverage comparison in rare wildcard cases, never looser.
import type { ApiObject, UserInfo } from "../../api/meta.js";
import type { PolicyRule } from "../../api/types/rbac.js";
import { admissionForbidden, type AdmissionAttributes, type AdmissionContext, type ValidatingPlugin } from "./admission.js";
import type { AuthorizationAttributes } from "./authorizer.js";
import type { RbacLister } from "./rbac.js";

const ROLE_RESOURCES = new Set(["roles", "clusterroles"]);
const BINDING_RESOURCES = new Set(["rolebindings", "clusterrolebindings"]);

function rulesOf(obj: ApiObject | undefined): PolicyRule[] {
  const rules = obj?.rules;
  return Array.isArray(rules) ? (rules as PolicyRule[]).filter((r) => typeof r === "object" && r !== null) : [];
}

/** Every authorization request a rule stands for, in the namespace the grant applies to. */
function requestsOf(rule: PolicyRule, user: UserInfo, namespace: string | undefined): AuthorizationAttributes[] {
  const verbs = rule.verbs ?? [];
  if (rule.nonResourceURLs?.length) {
    return rule.nonResourceURLs.flatMap((path) => verbs.map((verb) => ({ user, verb, resourceRequest: false, path })));
  }
  const out: AuthorizationAttributes[] = [];
  const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
  for (const group of rule.apiGroups ?? [""]) {
    for (const full of rule.resources ?? []) {
      const [resource, subresource] = full.split("/", 2) as [string, string | undefined];
      for (const verb of verbs) {
        for (const name of names) {
          out.push({
            user, verb, resourceRequest: true, group, resource,
            ...(subresource !== undefined && { subresource }),
            ...(namespace !== undefined && { namespace }),
            ...(name !== undefined && { name }),
          });
        }
      }
    }
  }
  return out;
}

/** The first permission of `rules` the user does not hold, described; undefined when all are held. */
async function firstMissing(rules: readonly PolicyRule[], user: UserInfo, namespace: string | undefined, ctx: AdmissionContext): Promise<string | undefined> {
  for (const rule of rules) {
    for (const request of requestsOf(rule, user, namespace)) {
      if ((await ctx.authorizer.authorize(request)).allowed) continue;
      return request.resourceRequest
        ? `${request.verb} on ${request.group ? `${request.resource}.${request.group}` : request.resource}${request.subresource ? `/${request.subresource}` : ""}${request.name ? ` named ${JSON.stringify(request.name)}` : ""}`
        : `${request.verb} on ${request.path}`;
    }
  }
  return undefined;
}

async function allowedTo(ctx: AdmissionContext, a: AdmissionAttributes, verb: string, resource: string, name: string | undefined, namespace: string | undefined): Promise<boolean> {
  const request: AuthorizationAttributes = {
    user: a.user, verb, resourceRequest: true, group: ctx.names.rbac, resource,
    ...(name !== undefined && { name }),
    ...(namespace !== undefined && { namespace }),
    ...(a.deadline && { deadline: a.deadline }),
  };
  return (await ctx.authorizer.authorize(request)).allowed;
}

/** `lister` resolves the role a binding references. */
export function rbacEscalationPlugin(lister: Pick<RbacLister, "roles" | "clusterRoles">): ValidatingPlugin {
  return {
    name: "RBACEscalationPrevention",
    admit(a, obj, old, ctx) {
      if ((a.operation !== "CREATE" && a.operation !== "UPDATE") || a.group !== ctx.names.rbac || a.subresource !== undefined || !obj) return;
      return checkEscalation(a, obj, old, ctx);
    },
  };

  async function checkEscalation(a: AdmissionAttributes, obj: ApiObject, old: ApiObject | undefined, ctx: AdmissionContext): Promise<void> {
    {
      const namespace = a.resource === "roles" || a.resource === "rolebindings" ? a.namespace : undefined;
      if (ROLE_RESOURCES.has(a.resource)) {
        if (JSON.stringify(rulesOf(obj)) === JSON.stringify(rulesOf(old))) return;
        if (await allowedTo(ctx, a, "escalate", a.resource, obj.metadata.name, namespace)) return;
        const missing = await firstMissing(rulesOf(obj), a.user, namespace, ctx);
        if (missing) throw admissionForbidden(a, `user ${JSON.stringify(a.user.username)} is attempting to grant RBAC permissions not currently held: ${missing}`);
        return;
      }
      if (!BINDING_RESOURCES.has(a.resource)) return;
      const ref = obj.roleRef as { kind?: string; name?: string } | undefined;
      if (!ref?.name || (old && JSON.stringify(old.roleRef) === JSON.stringify(ref) && JSON.stringify(old.subjects) === JSON.stringify(obj.subjects))) return;
      const roleResource = ref.kind === "Role" ? "roles" : "clusterroles";
      if (await allowedTo(ctx, a, "bind", roleResource, ref.name, namespace)) return;
      const role =
        ref.kind === "Role"
          ? lister.roles().find((r) => r.metadata.namespace === namespace && r.metadata.name === ref.name)
          : lister.clusterRoles().find((r) => r.metadata.name === ref.name);
      // An unresolvable roleRef grants nothing, so binding it escalates nothing; the authorizer reports it.
      if (!role) return;
      const missing = await firstMissing(rulesOf(role as ApiObject), a.user, namespace, ctx);
      if (missing) {
        throw admissionForbidden(a, `user ${JSON.stringify(a.user.username)} is attempting to grant RBAC permissions not currently held: ${missing} (needs bind on ${roleResource} ${JSON.stringify(ref.name)})`);
      }
    }
  }
}
