// ServiceAccount (core v1): a namespaced identity that Pods run as and tokens are requested for.
import type { ApiObject, ApiList } from "../meta.js";
import type { LocalObjectReference, ObjectReference } from "./core.js";

export const SERVICE_ACCOUNT_KIND = "ServiceAccount";

export interface ServiceAccount extends ApiObject {
  automountServiceAccountToken?: boolean;
  imagePullSecrets?: LocalObjectReference[];
  /** Deprecated: Secrets Pods of this account may use (enforced only with the enforce-mountable-secrets annotation). */
  secrets?: ObjectReference[];
}

export type ServiceAccountList = ApiList<ServiceAccount>;

/** The username a ServiceAccount authenticates as: `system:serviceaccount:<namespace>:<name>`. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}
