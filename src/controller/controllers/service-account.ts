// The service-account controller: a `default` ServiceAccount in every namespace, created again when deleted.
import { CORE_VERSION, type Namespace } from "../../api/types/core.js";
import type { ApiObject } from "../../api/meta.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError } from "../../errors.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

/** The name kube-controller-manager's `--controllers` uses for the same work. */
export const SERVICE_ACCOUNT_CONTROLLER = "serviceaccount";
/** The ServiceAccount every namespace gets (what Pods and `kubectl create token` use when none is named). */
export const DEFAULT_SERVICE_ACCOUNT = "default";

export interface ServiceAccountControllerOptions extends ControllerOptions {
  readonly serviceAccounts: ResourceClient;
  readonly namespaces: Informer<Namespace>;
  /** ServiceAccounts named `default` in every namespace (the only ones this controller needs to see). */
  readonly defaults: Informer<ApiObject>;
}

export class ServiceAccountController extends Controller {
  private readonly o: ServiceAccountControllerOptions;

  constructor(options: ServiceAccountControllerOptions) {
    super(SERVICE_ACCOUNT_CONTROLLER, [options.namespaces, options.defaults], options);
    this.o = options;
  }

  /** Keys are namespace names: a namespace that appears, and one whose `default` was deleted. */
  protected subscribe(): (() => void)[] {
    const byNamespace = (ns: Namespace): void => this.queue.add(ns.metadata.name!);
    const byAccount = (sa: ApiObject): void => {
      if (sa.metadata.name === DEFAULT_SERVICE_ACCOUNT && sa.metadata.namespace) this.queue.add(sa.metadata.namespace);
    };
    return [
      this.o.namespaces.addHandlers({ onAdd: byNamespace, onUpdate: (_old, ns) => byNamespace(ns) }),
      this.o.defaults.addHandlers({ onDelete: byAccount }),
    ];
  }

  protected async sync(namespace: string, signal: AbortSignal): Promise<void> {
    const ns = this.o.namespaces.get(namespace);
    // Nothing is created in a namespace that is gone or going (upstream skips terminating namespaces too).
    if (!ns || ns.metadata.deletionTimestamp || ns.status?.phase === "Terminating") return;
    if (this.o.defaults.get(`${namespace}/${DEFAULT_SERVICE_ACCOUNT}`)) return;
    const sa: ApiObject = { apiVersion: CORE_VERSION, kind: "ServiceAccount", metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace } };
    try {
      await this.o.serviceAccounts.create(sa, { namespace, signal });
    } catch (err) {
      // Created meanwhile (by someone else, or our cache is behind): what we wanted exists.
      if (isPlatformError(err, "ALREADY_EXISTS")) return;
      // The namespace is being deleted: upstream's controller ignores that refusal as well.
      if (isPlatformError(err, "FORBIDDEN") && /being terminated/.test(err.message)) return;
      throw err;
    }
    this.log.info({ namespace }, "default service account created");
  }
}
