// RBAC authorizer: Roles, ClusterRoles and their bindings, read from an injected lister, decide whether a request is allowed.
//
// Bindings are indexed by subject (user or group name) once per lister version; the grants of one
// (namespace, user, groups) are computed once and cached until the version changes, so a request costs a map
// lookup plus a scan of the rules that can apply to that user.
import type { GroupNames } from "../../api/group.js";
import type { ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject } from "../../api/types/rbac.js";
import type { UserInfo } from "../../api/meta.js";
import { invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { AuthorizationAttributes, Authorizer, AuthorizerDecision } from "./authorizer.js";
import { serviceAccountUsername } from "./identity.js";
import { ruleAllows } from "./rbac-match.js";

export { forbiddenMessage } from "./authorizer.js";

/** Current RBAC objects, read synchronously (an informer cache or a storage-backed lister). */
export interface RbacLister {
  roles(): readonly Role[];
  clusterRoles(): readonly ClusterRole[];
  roleBindings(): readonly RoleBinding[];
  clusterRoleBindings(): readonly ClusterRoleBinding[];
  /** Changes whenever any of the four sets changes: the authorizer rebuilds its index and drops its cache then. */
  version(): number;
}

export interface RbacAuthorizerOptions {
  readonly lister: RbacLister;
  readonly names: GroupNames;
  readonly logger?: Logger;
  /** Cached (namespace, user, groups) entries kept before the cache starts over; default 4096. */
  readonly cacheSize?: number;
}

interface Grant {
  readonly rules: readonly PolicyRule[];
  /** `ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`. */
  readonly source: string;
}

/** One subject of one binding, with its roleRef resolved (or why it could not be). */
interface SubjectBinding {
  readonly binding: string;
  readonly subject: string;
  readonly role: { readonly rules: readonly PolicyRule[]; readonly name: string } | { readonly error: string };
}

interface ScopeIndex {
  /** `u:<username>` / `g:<group>` → bindings naming that subject. */
  readonly bySubject: Map<string, SubjectBinding[]>;
  /** Invalid subjects in this scope: reported to every request evaluated here, never granting. */
  readonly errors: string[];
}

interface Index {
  readonly cluster: ScopeIndex;
  readonly namespaces: Map<string, ScopeIndex>;
}

/** One rule with where it came from. */
interface SourcedRule {
  readonly rule: PolicyRule;
  readonly source: string;
}

interface Evaluation {
  readonly grants: readonly Grant[];
  readonly errors: readonly string[];
  /** Resource rules by API group ("*" for rules naming every group), and non-resource rules: a request scans only its own. */
  readonly byGroup: ReadonlyMap<string, readonly SourcedRule[]>;
  readonly nonResource: readonly SourcedRule[];
}

const emptyScope = (): ScopeIndex => ({ bySubject: new Map(), errors: [] });
const asArray = <T>(value: unknown): readonly T[] => (Array.isArray(value) ? (value as T[]) : []);

export class RbacAuthorizer implements Authorizer {
  readonly #lister: RbacLister;
  readonly #names: GroupNames;
  readonly #logger: Logger;
  readonly #cacheSize: number;
  #version: number | undefined;
  #index: Index = { cluster: emptyScope(), namespaces: new Map() };
  #cache = new Map<string, Evaluation>();
  #loggedErrors = new Set<string>();

  constructor(options: RbacAuthorizerOptions) {
    if (!options?.lister) throw invalidOption("lister", "to be an RbacLister", options?.lister);
    if (!options.names) throw invalidOption("names", "to be GroupNames", options.names);
    const cacheSize = options.cacheSize ?? 4096;
    if (!Number.isInteger(cacheSize) || cacheSize < 1) throw invalidOption("cacheSize", "to be an integer ≥ 1", cacheSize);
    this.#lister = options.lister;
    this.#names = options.names;
    this.#logger = options.logger ?? silentLogger();
    this.#cacheSize = cacheSize;
  }

  authorize(a: AuthorizationAttributes): AuthorizerDecision {
    const evaluation = this.#evaluate(a.user, a.resourceRequest ? a.namespace : undefined);
    const candidates = a.resourceRequest ? [evaluation.byGroup.get(a.group ?? ""), evaluation.byGroup.get("*")] : [evaluation.nonResource];
    for (const list of candidates) {
      for (const { rule, source } of list ?? []) {
        if (ruleAllows(a, rule)) return { allowed: true, reason: `RBAC: allowed by ${source}`, evaluationErrors: evaluation.errors };
      }
    }
    const reason = evaluation.errors.length > 0 ? `RBAC: ${evaluation.errors.join("; ")}` : "";
    return { allowed: false, reason, evaluationErrors: evaluation.errors };
  }

  /** Every rule that applies to `user` in `namespace` (cluster-wide rules included), for SelfSubjectRulesReview-like tools. */
  rulesFor(user: UserInfo, namespace?: string): { readonly rules: readonly PolicyRule[]; readonly errors: readonly string[] } {
    const e = this.#evaluate(user, namespace);
    return { rules: e.grants.flatMap((g) => g.rules), errors: e.errors };
  }

  #evaluate(user: UserInfo, namespace: string | undefined): Evaluation {
    this.#refresh();
    const groups = asArray<string>(user.groups);
    const key = `${namespace ?? ""}\u0000${user.username}\u0000${[...groups].sort().join("\u0000")}`;
    let e = this.#cache.get(key);
    if (e === undefined) {
      const subjects = [`u:${user.username}`, ...groups.map((g) => `g:${g}`)];
      const grants: Grant[] = [];
      const errors: string[] = [];
      const scopes = [this.#index.cluster];
      const ns = namespace ? this.#index.namespaces.get(namespace) : undefined;
      if (ns) scopes.push(ns);
      for (const scope of scopes) {
        errors.push(...scope.errors);
        for (const s of subjects) {
          for (const b of scope.bySubject.get(s) ?? []) {
            if ("error" in b.role) errors.push(`${b.binding}: ${b.role.error}`);
            else grants.push({ rules: b.role.rules, source: `${b.binding} of ${b.role.name} to ${b.subject}` });
          }
        }
      }
      e = { grants, errors, ...bucket(grants) };
      if (this.#cache.size >= this.#cacheSize) this.#cache.clear();
      this.#cache.set(key, e);
    }
    return e;
  }

  #refresh(): void {
    const version = this.#lister.version();
    if (version === this.#version) return;
    this.#index = this.#build();
    this.#version = version;
    this.#cache = new Map();
  }

  #build(): Index {
    const l = this.#lister;
    const rbac = this.#names.rbac;
    const roles = new Map<string, readonly PolicyRule[]>();
    for (const r of l.roles()) roles.set(`${r.metadata?.namespace ?? ""}/${r.metadata?.name ?? ""}`, asArray<PolicyRule>(r.rules));
    const clusterRoles = new Map<string, readonly PolicyRule[]>();
    for (const r of l.clusterRoles()) clusterRoles.set(r.metadata?.name ?? "", asArray<PolicyRule>(r.rules));

    const resolve = (binding: RoleBinding | ClusterRoleBinding, namespace: string | undefined): SubjectBinding["role"] => {
      const ref = binding.roleRef ?? ({} as RoleBinding["roleRef"]);
      if (ref.apiGroup !== rbac) return { error: `roleRef apiGroup ${JSON.stringify(ref.apiGroup ?? "")} is not ${JSON.stringify(rbac)}` };
      if (ref.kind === "ClusterRole") {
        const rules = clusterRoles.get(ref.name);
        return rules ? { rules, name: `ClusterRole ${JSON.stringify(ref.name)}` } : { error: `clusterroles.${rbac} ${JSON.stringify(ref.name ?? "")} not found` };
      }
      if (ref.kind === "Role" && namespace !== undefined) {
        const rules = roles.get(`${namespace}/${ref.name}`);
        return rules ? { rules, name: `Role ${JSON.stringify(ref.name)}` } : { error: `roles.${rbac} ${JSON.stringify(ref.name ?? "")} not found in the namespace ${JSON.stringify(namespace)}` };
      }
      return { error: `roleRef kind ${JSON.stringify(ref.kind ?? "")} cannot be referenced by a ${namespace === undefined ? "ClusterRoleBinding" : "RoleBinding"}` };
    };

    const cluster = emptyScope();
    for (const b of l.clusterRoleBindings()) this.#add(cluster, b, `ClusterRoleBinding ${JSON.stringify(b.metadata?.name ?? "")}`, undefined, resolve);
    const namespaces = new Map<string, ScopeIndex>();
    for (const b of l.roleBindings()) {
      const ns = b.metadata?.namespace ?? "";
      let scope = namespaces.get(ns);
      if (!scope) namespaces.set(ns, (scope = emptyScope()));
      this.#add(scope, b, `RoleBinding ${JSON.stringify(`${ns}/${b.metadata?.name ?? ""}`)}`, ns, resolve);
    }
    this.#logNewErrors(cluster, namespaces);
    return { cluster, namespaces };
  }

  #add(
    scope: ScopeIndex,
    binding: RoleBinding | ClusterRoleBinding,
    label: string,
    namespace: string | undefined,
    resolve: (b: RoleBinding | ClusterRoleBinding, ns: string | undefined) => SubjectBinding["role"],
  ): void {
    let role: SubjectBinding["role"] | undefined;
    for (const s of asArray<Subject>(binding.subjects)) {
      const subject = subjectKey(s, namespace);
      if ("error" in subject) {
        scope.errors.push(`${label}: ${subject.error}`);
        continue;
      }
      role ??= resolve(binding, namespace);
      let list = scope.bySubject.get(subject.key);
      if (!list) scope.bySubject.set(subject.key, (list = []));
      list.push({ binding: label, subject: subject.text, role });
    }
  }

  #logNewErrors(cluster: ScopeIndex, namespaces: Map<string, ScopeIndex>): void {
    const now = new Set<string>();
    const collect = (scope: ScopeIndex) => {
      for (const e of scope.errors) now.add(e);
      for (const list of scope.bySubject.values()) for (const b of list) if ("error" in b.role) now.add(`${b.binding}: ${b.role.error}`);
    };
    collect(cluster);
    for (const scope of namespaces.values()) collect(scope);
    for (const e of now) if (!this.#loggedErrors.has(e)) this.#logger.warn({ error: e }, "RBAC binding cannot grant anything");
    this.#loggedErrors = now;
  }
}

/** Sorts each rule into the API groups it names (once per cached evaluation). */
function bucket(grants: readonly Grant[]): Pick<Evaluation, "byGroup" | "nonResource"> {
  const byGroup = new Map<string, SourcedRule[]>();
  const nonResource: SourcedRule[] = [];
  for (const { rules, source } of grants) {
    for (const rule of rules) {
      if (asArray(rule?.nonResourceURLs).length > 0) nonResource.push({ rule, source });
      for (const g of new Set(asArray<string>(rule?.apiGroups))) {
        let list = byGroup.get(g);
        if (!list) byGroup.set(g, (list = []));
        list.push({ rule, source });
      }
    }
  }
  return { byGroup, nonResource };
}

/** The index key of a subject, or why the subject is invalid (seed §7: an error, never a grant). */
function subjectKey(s: Subject, bindingNamespace: string | undefined): { key: string; text: string } | { error: string } {
  const kind: unknown = s?.kind;
  const name = typeof s?.name === "string" ? s.name : "";
  if (name === "") return { error: `subject of kind ${JSON.stringify(kind)} has no name` };
  switch (kind) {
    case "User":
    case "Group":
      if (s.namespace) return { error: `subject ${kind} ${JSON.stringify(name)} must not have a namespace (got ${JSON.stringify(s.namespace)})` };
      return { key: `${kind === "User" ? "u" : "g"}:${name}`, text: `${kind} ${JSON.stringify(name)}` };
    case "ServiceAccount": {
      // In a RoleBinding a ServiceAccount without a namespace means the binding's own, as upstream.
      const ns = s.namespace || bindingNamespace;
      if (!ns) return { error: `subject ServiceAccount ${JSON.stringify(name)} needs a namespace` };
      return { key: `u:${serviceAccountUsername(ns, name)}`, text: `ServiceAccount ${JSON.stringify(`${ns}/${name}`)}` };
    }
    default:
      return { error: `subject kind ${JSON.stringify(kind)} is not recognized (expected User, Group or ServiceAccount)` };
  }
}
