// The API group suffix lives here and only here: every group, signer name and well-known label is derived from it.

export const DEFAULT_GROUP_SUFFIX = "platform.io";

/** Group names and well-known signer names for one suffix (default `platform.io`, or e.g. `k8s.io`). */
export interface GroupNames {
  readonly suffix: string;
  readonly certificates: string;
  readonly authentication: string;
  readonly authorization: string;
  readonly rbac: string;
  readonly events: string;
  readonly coordination: string;
  readonly apps: string;
  readonly signers: {
    readonly apiserverClient: string;
    readonly nodeagentClient: string;
    readonly nodeagentServing: string;
    readonly legacyUnknown: string;
  };
}

const SUFFIX_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;

export function groupNames(suffix: string = DEFAULT_GROUP_SUFFIX): GroupNames {
  if (!SUFFIX_RE.test(suffix)) {
    throw new TypeError(`expected \`groupSuffix\` to be a DNS name with at least two labels, got ${JSON.stringify(suffix)}`);
  }
  return {
    suffix,
    certificates: `certificates.${suffix}`,
    authentication: `authentication.${suffix}`,
    authorization: `authorization.${suffix}`,
    rbac: `rbac.authorization.${suffix}`,
    events: `events.${suffix}`,
    coordination: `coordination.${suffix}`,
    apps: "apps",
    signers: {
      apiserverClient: `${suffix}/apiserver-client`,
      nodeagentClient: `${suffix}/apiserver-client-nodeagent`,
      nodeagentServing: `${suffix}/nodeagent-serving`,
      legacyUnknown: `${suffix}/legacy-unknown`,
    },
  };
}
