// The root CA publisher: a ConfigMap in every namespace whose `ca.crt` verifies the API server, kept as published.
import { isDeepStrictEqual } from "node:util";
import type { GroupNames } from "../../api/group.js";
import { CORE_VERSION, type ConfigMap, type Namespace } from "../../api/types/core.js";
import type { ResourceClient } from "../../client/types.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";
import { liveNamespace, namespaceKeys, settledRefusal } from "./per-namespace.js";

/** kube-controller-manager's name for the same work (its `--controllers` alias). */
export const ROOT_CA_PUBLISHER_CONTROLLER = "root-ca-cert-publisher";
/** The one key of the published ConfigMap. */
export const ROOT_CA_KEY = "ca.crt";

export interface RootCaPublisherOptions extends ControllerOptions {
  readonly configMaps: ResourceClient<ConfigMap>;
  readonly namespaces: Informer<Namespace>;
  /** The published ConfigMaps (the informer watches only their name). */
  readonly published: Informer<ConfigMap>;
  readonly names: GroupNames;
  /** PEM bundle of the CA(s) that verify the API server's serving certificate. */
  readonly rootCa: string;
}

/**
 * As upstream's publisher: created where missing (and again when deleted), its data and description annotation put
 * back when someone changes them; other annotations, labels and binaryData are left as they are. Nothing is written in a
 * namespace that is being deleted.
 */
export class RootCaPublisher extends Controller {
  private readonly o: RootCaPublisherOptions;

  constructor(options: RootCaPublisherOptions) {
    super(ROOT_CA_PUBLISHER_CONTROLLER, [options.namespaces, options.published], options);
    this.o = options;
  }

  /** Keys are namespace names: a namespace that appears, and one whose ConfigMap changed or went. */
  protected subscribe(): (() => void)[] {
    const { byNamespace, byObject } = namespaceKeys(this.queue, this.o.names.rootCaConfigMap.name);
    return [
      this.o.namespaces.addHandlers({ onAdd: byNamespace, onUpdate: (_old, ns) => byNamespace(ns) }),
      this.o.published.addHandlers({ onUpdate: (_old, cm) => byObject(cm), onDelete: byObject }),
    ];
  }

  protected async sync(namespace: string, signal: AbortSignal): Promise<void> {
    if (!liveNamespace(this.o.namespaces, namespace)) return;
    const { name, descriptionAnnotation, description } = this.o.names.rootCaConfigMap;
    const data = { [ROOT_CA_KEY]: this.o.rootCa };
    const current = this.o.published.get(`${namespace}/${name}`);
    try {
      if (!current) {
        const cm: ConfigMap = { apiVersion: CORE_VERSION, kind: "ConfigMap", metadata: { name, namespace, annotations: { [descriptionAnnotation]: description } }, data };
        await this.o.configMaps.create(cm, { namespace, signal });
        this.log.info({ namespace, configMap: name }, "root CA ConfigMap created");
        return;
      }
      if (isDeepStrictEqual(current.data, data) && current.metadata.annotations?.[descriptionAnnotation]) return;
      // The informer's object is shared: the update goes from a copy (with its resourceVersion: a conflict is retried).
      const next: ConfigMap = { ...current, metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, [descriptionAnnotation]: description } }, data };
      await this.o.configMaps.update(next, { signal });
      this.log.info({ namespace, configMap: name }, "root CA ConfigMap updated");
    } catch (err) {
      // Created meanwhile: the informer brings it, and an update follows if it differs.
      if (settledRefusal(err)) return;
      throw err;
    }
  }
}
