// The ClusterRole aggregation controller: upstream's rule order and de-duplication, the role itself left out, rules
// that follow the labelled roles as they come, change and go, and no write when the rules already match.
import { afterEach, describe, expect, it } from "vitest";
import type { ClusterRole, PolicyRule } from "../../../src/api/types/rbac.js";
import { aggregatedRules, ClusterRoleAggregation } from "../../../src/controller/controllers/clusterrole-aggregation.js";
import { Informer } from "../../../src/controller/informer.js";
import { FakeStore } from "../fake-store.js";
import { until } from "../../fixtures/wait.js";

const TO_VIEW = { "rbac.authorization.platform.io/aggregate-to-view": "true" };
const rule = (resource: string, verbs = ["get"]): PolicyRule => ({ apiGroups: [""], resources: [resource], verbs });
const role = (name: string, rules: PolicyRule[], labels?: Record<string, string>, selectors?: ClusterRole["aggregationRule"]): ClusterRole => ({
  apiVersion: "rbac.authorization.platform.io/v1",
  kind: "ClusterRole",
  metadata: { name, ...(labels && { labels }) },
  rules,
  ...(selectors && { aggregationRule: selectors }),
});

const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

describe("aggregatedRules", () => {
  it("takes the picked roles by name within each selector, each rule once, never the role's own", () => {
    const view = role("view", [rule("stale")], TO_VIEW, { clusterRoleSelectors: [{ matchLabels: TO_VIEW }, { matchExpressions: [{ key: "extra", operator: "Exists" }] }] });
    const all = [
      view,
      role("b-second", [rule("pods"), rule("configmaps")], TO_VIEW),
      role("a-first", [rule("configmaps"), rule("secrets", ["list"])], TO_VIEW),
      role("c-extra", [rule("leases"), rule("pods")], { extra: "x" }),
      role("unlabelled", [rule("everything", ["*"])]),
    ];
    expect(aggregatedRules(view, all)).toEqual([rule("configmaps"), rule("secrets", ["list"]), rule("pods"), rule("leases")]);
    expect(aggregatedRules(role("none", [], undefined, { clusterRoleSelectors: [] }), all)).toEqual([]);
  });
});

describe("ClusterRoleAggregation", () => {
  it("keeps an aggregated role's rules equal to what its selectors pick, writing only on change", async () => {
    const roles = new FakeStore<ClusterRole>({ kind: "ClusterRole", apiVersion: "rbac.authorization.platform.io/v1" });
    roles.put(role("view", [], undefined, { clusterRoleSelectors: [{ matchLabels: TO_VIEW }] }));
    roles.put(role("view-core", [rule("configmaps")], TO_VIEW));
    roles.put(role("other", [rule("secrets")]));
    const writer = roles.client();
    const informer = new Informer<ClusterRole>({ listWatcher: roles.client(), name: "clusterroles", random: () => 0 });
    const controller = new ClusterRoleAggregation({ clusterRoles: writer, informer, stopTimeoutMs: 1000 });
    const signal = new AbortController();
    informer.start(signal.signal);
    await controller.start(signal.signal);
    running.push({ stop: async () => (await controller.stop(), await informer.stop(), signal.abort()) });
    const rules = () => roles.objects.get("view")?.rules;
    await until(() => rules()?.length === 1, "view aggregated");
    expect(rules()).toEqual([rule("configmaps")]);
    roles.put(role("widgets", [rule("widgets", ["list"])], TO_VIEW));
    await until(() => rules()?.length === 2, "a labelled role joins");
    expect(rules()).toEqual([rule("configmaps"), rule("widgets", ["list"])]);
    roles.put(role("widgets", [rule("widgets", ["list"])]));
    await until(() => rules()?.length === 1, "its label removed: its rules go");
    roles.remove("view-core");
    await until(() => rules()?.length === 0, "the last labelled role deleted");
    const writes = writer.count("update");
    // A change to an unlabelled role touches nothing.
    roles.put(role("other", [rule("secrets"), rule("pods")]));
    await new Promise((r) => setTimeout(r, 300));
    expect(writer.count("update")).toBe(writes);
  });
});
