// The API group suffix lives here and only here: every group is derived from it, and it picks the naming profile.
import { namingProfile, type NamingProfile } from "./naming-profile.js";

export const DEFAULT_GROUP_SUFFIX = "platform.io";

/**
 * Group names for one suffix (default `platform.io`, or e.g. `k8s.io`), with the well-known names of the naming profile
 * that suffix selects (signer names, token claim, label prefixes: see naming-profile.ts).
 */
export interface GroupNames extends NamingProfile {
  readonly suffix: string;
  readonly certificates: string;
  readonly authentication: string;
  readonly authorization: string;
  readonly rbac: string;
  readonly events: string;
  readonly coordination: string;
  readonly apps: string;
}

const SUFFIX_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;

export function groupNames(suffix: string = DEFAULT_GROUP_SUFFIX): GroupNames {
  if (!SUFFIX_RE.test(suffix)) {
    throw new TypeError(`expected \`groupSuffix\` to be a DNS name with at least two labels, got ${JSON.stringify(suffix)}`);
  }
  return {
    ...namingProfile(suffix),
    suffix,
    certificates: `certificates.${suffix}`,
    authentication: `authentication.${suffix}`,
    authorization: `authorization.${suffix}`,
    rbac: `rbac.authorization.${suffix}`,
    events: `events.${suffix}`,
    coordination: `coordination.${suffix}`,
    apps: "apps",
  };
}
