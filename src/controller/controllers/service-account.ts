// The service-account controller: a `default` ServiceAccount in every namespace, created again when deleted.
import { CORE_VERSION, type Namespace } from "../../api/types/core.js";
import type { ApiObject } from "../../api/meta.js";
import type { ResourceClient } from "../../client/types.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";
import { liveNamespace, namespaceKeys, settledRefusal } from "./per-namespace.js";

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
    const { byNamespace, byObject } = namespaceKeys(this.queue, DEFAULT_SERVICE_ACCOUNT);
    return [
      this.o.namespaces.addHandlers({ onAdd: byNamespace, onUpdate: (_old, ns) => byNamespace(ns) }),
      this.o.defaults.addHandlers({ onDelete: byObject }),
    ];
  }

  protected async sync(namespace: string, signal: AbortSignal): Promise<void> {
    if (!liveNamespace(this.o.namespaces, namespace)) return;
    if (this.o.defaults.get(`${namespace}/${DEFAULT_SERVICE_ACCOUNT}`)) return;
    const sa: ApiObject = { apiVersion: CORE_VERSION, kind: "ServiceAccount", metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace } };
    try {
      await this.o.serviceAccounts.create(sa, { namespace, signal });
    } catch (err) {
      if (settledRefusal(err)) return;
      throw err;
    }
    this.log.info({ namespace }, "default service account created");
  }
}
