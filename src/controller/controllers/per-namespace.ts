// What the controllers that keep one object in every namespace share (the `default` ServiceAccount, the root CA
// ConfigMap): keys are namespace names, nothing is written in a namespace that is gone or going, and a create that
// finds the object made meanwhile, or that the namespace's deletion refuses, is done.
import type { ApiObject } from "../../api/meta.js";
import type { Namespace } from "../../api/types/core.js";
import { isPlatformError } from "../../errors.js";
import type { Informer } from "../informer.js";
import type { WorkQueue } from "../workqueue.js";

/** The handlers that queue a namespace: when it appears or changes, and when its object named `name` does. */
export function namespaceKeys(queue: WorkQueue, name: string): { byNamespace(ns: Namespace): void; byObject(obj: ApiObject): void } {
  return {
    byNamespace: (ns) => queue.add(ns.metadata.name!),
    byObject: (obj) => {
      if (obj.metadata.name === name && obj.metadata.namespace) queue.add(obj.metadata.namespace);
    },
  };
}

/** The namespace, unless it is gone or being deleted (upstream's controllers skip terminating namespaces too). */
export function liveNamespace(namespaces: Informer<Namespace>, name: string): Namespace | undefined {
  const ns = namespaces.get(name);
  return !ns || ns.metadata.deletionTimestamp || ns.status?.phase === "Terminating" ? undefined : ns;
}

/**
 * A write's error that leaves nothing to do: the object was created meanwhile (by someone else, or our cache is
 * behind: the informer brings it), or the namespace is being deleted (upstream ignores that refusal as well).
 */
export function settledRefusal(err: unknown): boolean {
  return isPlatformError(err, "ALREADY_EXISTS") || (isPlatformError(err, "FORBIDDEN") && /being terminated/.test(err.message));
}
