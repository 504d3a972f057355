// The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` gets, as its rules, the rules of
// every ClusterRole its selectors pick (upstream's clusterrole-aggregation controller; how `admin`, `edit` and `view`
// grow with the labels of roles added for new resources).
import { isDeepStrictEqual } from "node:util";
import type { ClusterRole, PolicyRule } from "../../api/types/rbac.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError } from "../../errors.js";
import { labelSelectorMatches } from "../../apiserver/selectors.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

/** kube-controller-manager's name for the same work (enabled by default there and here). */
export const CLUSTERROLE_AGGREGATION_CONTROLLER = "clusterrole-aggregation";

export interface ClusterRoleAggregationOptions extends ControllerOptions {
  readonly clusterRoles: ResourceClient<ClusterRole>;
  readonly informer: Informer<ClusterRole>;
}

/**
 * The rules an aggregated role should hold, as upstream computes them: for each selector in turn, the roles it
 * picks (the role itself left out) sorted by name, each rule added unless an equal one is there already.
 */
export function aggregatedRules(role: ClusterRole, all: readonly ClusterRole[]): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const sorted = [...all].sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : a.metadata.name! > b.metadata.name! ? 1 : 0));
  for (const selector of role.aggregationRule?.clusterRoleSelectors ?? []) {
    for (const other of sorted) {
      if (other.metadata.name === role.metadata.name || !labelSelectorMatches(selector, other.metadata.labels)) continue;
      for (const rule of other.rules ?? []) if (!rules.some((r) => isDeepStrictEqual(r, rule))) rules.push(rule);
    }
  }
  return rules;
}

/** Keys are ClusterRole names; any ClusterRole's change looks at every aggregated one again (upstream's way). */
export class ClusterRoleAggregation extends Controller {
  private readonly o: ClusterRoleAggregationOptions;

  constructor(options: ClusterRoleAggregationOptions) {
    super(CLUSTERROLE_AGGREGATION_CONTROLLER, [options.informer], options);
    this.o = options;
  }

  protected subscribe(): (() => void)[] {
    const all = () => {
      for (const role of this.o.informer.list()) if (role.aggregationRule) this.queue.add(role.metadata.name!);
    };
    return [this.o.informer.addHandlers({ onAdd: all, onUpdate: all, onDelete: all })];
  }

  protected async sync(name: string, signal: AbortSignal): Promise<void> {
    const role = this.o.informer.get(name);
    if (!role?.aggregationRule || role.metadata.deletionTimestamp) return;
    const rules = aggregatedRules(role, this.o.informer.list());
    // An empty list and none are the same rules (upstream's semantic equality).
    if (isDeepStrictEqual(rules, role.rules ?? [])) return;
    try {
      // From a copy of the shared cached object, with its resourceVersion: a conflict is retried with the newer one.
      await this.o.clusterRoles.update({ ...role, rules }, { signal });
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return;
      throw err;
    }
    // At debug: every first start fills admin, edit and view, and a start's log ends with its banner.
    this.log.debug({ clusterRole: name, rules: rules.length }, "aggregated ClusterRole's rules updated");
  }
}
