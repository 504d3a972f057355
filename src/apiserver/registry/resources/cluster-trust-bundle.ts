// ClusterTrustBundle: definition and strategy (signer-prefixed names, PEM trust anchors, signerName immutable).
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import { CLUSTER_TRUST_BUNDLE_KIND, CLUSTER_TRUST_BUNDLE_VERSION, trustBundleNamePrefix, type ClusterTrustBundleSpec } from "../../../api/types/trust-bundle.js";
import { kindSchema } from "../../../api/schema.js";
import { validateTrustBundle } from "../../../pki/bundle.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { dns1123SubdomainProblem, errorsFromCauses, invalid, required, validateSignerName } from "../validation.js";
import { buildStrategy, immutableFields, specChanged, defineResource } from "./strategy-kit.js";
import { column, nameColumn, orNone } from "./printing.js";

const spec = (obj: ApiObject): Partial<ClusterTrustBundleSpec> | undefined => obj.spec as Partial<ClusterTrustBundleSpec> | undefined;

/**
 * A bundle of signer `example.com/foo` is named `example.com:foo:<suffix>`, the suffix a DNS subdomain; a bundle
 * without a signer has no `:` in its name at all, so it can never pass for a signer's bundle.
 */
export function trustBundleNameProblem(name: string, signerName: string): string | undefined {
  if (signerName === "") {
    if (name.includes(":")) return `ClusterTrustBundle without signer name must not have ":" in its name`;
    return dns1123SubdomainProblem(name);
  }
  const prefix = trustBundleNamePrefix(signerName);
  if (!name.startsWith(prefix)) return `ClusterTrustBundle for signerName ${signerName} must be named with prefix ${prefix}`;
  return dns1123SubdomainProblem(name.slice(prefix.length));
}

function bundleErrors(pem: string): FieldError[] {
  const field = "spec.trustBundle";
  if (pem === "") return [required(field, "at least one trust anchor must be provided")];
  try {
    validateTrustBundle(pem);
    return [];
  } catch (err) {
    return errorsFromCauses(field, "<value omitted>", err);
  }
}

function validateBundle(obj: ApiObject): FieldError[] {
  const s = spec(obj);
  if (!s) return [required("spec")];
  const signerName = s.signerName ?? "";
  const errors: FieldError[] = [];
  const name = obj.metadata.name;
  if (name) {
    const why = trustBundleNameProblem(name, signerName);
    if (why) errors.push(invalid("metadata.name", name, why));
  }
  if (signerName !== "") errors.push(...validateSignerName("spec.signerName", signerName));
  errors.push(...bundleErrors(s.trustBundle ?? ""));
  return errors;
}

const strategy = buildStrategy({
  schema: kindSchema(CLUSTER_TRUST_BUNDLE_KIND),
  validate: validateBundle,
  validateUpdate: (next, previous) => immutableFields(next, previous, ["spec.signerName"]),
  specChanged,
});

export function clusterTrustBundleDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.certificates,
    version: CLUSTER_TRUST_BUNDLE_VERSION,
    kind: CLUSTER_TRUST_BUNDLE_KIND,
    plural: "clustertrustbundles",
    namespaced: false,
    // Signer bundles carry ':' in their names; the exact rule depends on spec.signerName and is checked by validate.
    nameRule: "path-segment",
    fieldSelectors: { "spec.signerName": (obj) => spec(obj)?.signerName ?? "" },
    columns: [nameColumn, column("SignerName", "Signer the bundle belongs to.")],
    row: (obj) => [obj.metadata.name, orNone(spec(obj)?.signerName)],
    strategy,
  });
}
