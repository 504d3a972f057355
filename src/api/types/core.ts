// Core group (v1) kinds the server needs beside the seed resources: Namespace, Secret, ConfigMap, Pod, and object references.
import type { ApiObject, ApiList } from "../meta.js";

export const NAMESPACE_KIND = "Namespace";
export const SECRET_KIND = "Secret";
export const CONFIG_MAP_KIND = "ConfigMap";
export const POD_KIND = "Pod";
export const CORE_VERSION = "v1";

export interface LocalObjectReference {
  name?: string;
}

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

export type NamespacePhase = "Active" | "Terminating";

/** Why a namespace being deleted is not gone yet (upstream's condition types and texts). */
export interface NamespaceCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface Namespace extends ApiObject {
  spec?: { finalizers?: string[] };
  status?: { phase?: NamespacePhase; conditions?: NamespaceCondition[] };
}

export interface Secret extends ApiObject {
  /** Values are base64 in JSON. */
  data?: Record<string, string>;
  /** Write-only convenience: merged into `data` (base64-encoded) by the server, never stored. */
  stringData?: Record<string, string>;
  /** Defaults to "Opaque". */
  type?: string;
  /** Once true, `data` and `immutable` can no longer change. */
  immutable?: boolean;
}

export interface ConfigMap extends ApiObject {
  /** UTF-8 text entries. */
  data?: Record<string, string>;
  /** Binary entries, base64 in JSON; a key is in data or binaryData, not both. */
  binaryData?: Record<string, string>;
  /** Once true, `data`, `binaryData` and `immutable` can no longer change. */
  immutable?: boolean;
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
}

export interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  image?: string;
}

export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  serviceAccountName?: string;
  nodeName?: string;
  restartPolicy?: "Always" | "OnFailure" | "Never";
}

export interface PodStatus {
  phase?: PodPhase;
  reason?: string;
  podIP?: string;
  containerStatuses?: ContainerStatus[];
}

export interface Pod extends ApiObject {
  spec: PodSpec;
  status?: PodStatus;
}

export type NamespaceList = ApiList<Namespace>;
export type SecretList = ApiList<Secret>;
export type ConfigMapList = ApiList<ConfigMap>;
export type PodList = ApiList<Pod>;
