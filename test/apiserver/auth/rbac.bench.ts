// RBAC decision cost at scale: 100 ClusterRoles, 2,000 ClusterRoleBindings, 500 namespaces with 5,000 RoleBindings.
// Run: npx vitest bench --run test/apiserver/auth/rbac.bench.ts
import { bench, describe } from "vitest";
import type { AuthorizationAttributes } from "../../../src/apiserver/auth/authorizer.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { clusterRole, clusterRoleBinding, groupSubject, names, role, roleBinding, rule, StaticLister, userSubject } from "./fixtures.js";

const world = () =>
  new StaticLister({
    clusterRoles: Array.from({ length: 100 }, (_, i) =>
      clusterRole(`cr-${i}`, Array.from({ length: 5 }, (_, j) => rule({ apiGroups: [`g${j}.io`], resources: [`r${i}`, `r${i}/status`], verbs: ["get", "list"] }))),
    ),
    clusterRoleBindings: Array.from({ length: 2000 }, (_, i) => clusterRoleBinding(`crb-${i}`, `cr-${i % 100}`, [userSubject(`user-${i}`), groupSubject(`group-${i % 50}`)])),
    roles: Array.from({ length: 500 }, (_, n) => role(`ns-${n}`, "r", [rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] })])),
    roleBindings: Array.from({ length: 5000 }, (_, i) =>
      roleBinding(`ns-${i % 500}`, `rb-${i}`, i % 2 ? { kind: "Role", name: "r" } : { kind: "ClusterRole", name: `cr-${i % 100}` }, [userSubject(`user-${i % 2000}`)]),
    ),
  });
const attrs = (i: number): AuthorizationAttributes => ({
  user: { username: `user-${i % 1000}`, groups: [`group-${i % 50}`, "system:authenticated"] },
  verb: "get",
  resourceRequest: true,
  group: "",
  resource: "pods",
  namespace: `ns-${i % 500}`,
  name: "p",
});

// Each iteration makes 1,000 decisions over 1,000 distinct (namespace, user, groups), so per-decision cost is the mean / 1,000.
describe("RbacAuthorizer, 1,000 decisions per iteration", () => {
  const cached = new RbacAuthorizer({ lister: world(), names });
  const uncached = new RbacAuthorizer({ lister: world(), names, cacheSize: 1 });
  const changing = world();
  const rebuilt = new RbacAuthorizer({ lister: changing, names });
  for (let i = 0; i < 1000; i++) cached.authorize(attrs(i));
  const thousand = (a: RbacAuthorizer) => {
    for (let i = 0; i < 1000; i++) a.authorize(attrs(i));
  };
  bench("cached decisions", () => thousand(cached));
  bench("uncached decisions", () => thousand(uncached), { iterations: 20 });
  bench("index rebuild after a change (one decision)", () => {
    changing.bump();
    rebuilt.authorize(attrs(0));
  }, { iterations: 20 });
});
