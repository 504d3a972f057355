// The API server configuration groups of seed 002 §2.6 (v1 apiserver.config.<suffix>, v1alpha1/v1beta1 apiserver.<suffix>).
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";

export interface ApiserverConfigVersions {
  readonly v1: string;
  readonly v1alpha1: string;
  readonly v1beta1: string;
}

/** The three apiVersions under `groupSuffix`; each kind is served in some of them (the kinds table of §2.6). */
export function apiserverConfigVersions(groupSuffix: string = DEFAULT_GROUP_SUFFIX): ApiserverConfigVersions {
  const { suffix } = groupNames(groupSuffix);
  return { v1: `apiserver.config.${suffix}/v1`, v1alpha1: `apiserver.${suffix}/v1alpha1`, v1beta1: `apiserver.${suffix}/v1beta1` };
}
