// The admission plugins by name, in the order they run: which ones run is chosen by flags and the AdmissionConfiguration file.
import { ADMISSION_PLUGINS, type AdmissionPluginConfigs, type AdmissionPluginName } from "../../config/admission-config.js";
import { PlatformError } from "../../errors.js";
import { systemClock, type Clock } from "../../time/clock.js";
import type { MutatingPlugin, ValidatingPlugin } from "./admission.js";
import { csrApprovalPlugin } from "./admission-csr-approval.js";
import { csrRequesterPlugin } from "./admission-csr-requester.js";
import { csrRevocationPlugin } from "./admission-csr-revocation.js";
import { csrSigningPlugin } from "./admission-csr-signing.js";
import { csrSubjectRestrictionPlugin } from "./admission-csr-subject-restriction.js";
import { eventRateLimitPlugin } from "./admission-event-rate-limit.js";
import { imagePolicyPlugin } from "./admission-image-policy.js";
import { rbacEscalationPlugin } from "./admission-rbac-escalation.js";
import { webhookPlugin, type WebhookPluginDeps } from "./admission-webhook.js";
import { trustBundleAttestPlugin } from "./admission-trust-bundle-attest.js";
import type { RbacLister } from "./rbac.js";

/** What plugins are built from. */
export interface AdmissionPluginDeps {
  readonly configs?: AdmissionPluginConfigs;
  /** Resolves the roles a binding references (RBACEscalationPrevention). */
  readonly lister?: Pick<RbacLister, "roles" | "clusterRoles">;
  readonly clock?: Clock;
  /** Namespace labels and egress of the admission webhooks. */
  readonly webhooks?: WebhookPluginDeps;
}

type Built = { readonly mutating: MutatingPlugin } | { readonly validating: ValidatingPlugin };

function needs<T>(value: T | undefined, plugin: AdmissionPluginName, what: string): T {
  if (value === undefined) throw new PlatformError("INTERNAL", `the ${plugin} admission plugin is built without ${what}`);
  return value;
}

/** Chain order: the mutating plugin first; then the cheap refusal of an Event flood before the checks that ask the authorizer. */
const BUILD: { readonly [P in AdmissionPluginName]: (deps: AdmissionPluginDeps) => Built } = {
  CertificateSigningRequestRequester: () => ({ mutating: csrRequesterPlugin }),
  MutatingAdmissionWebhook: (d) => ({ mutating: webhookPlugin("Mutating", needs(d.configs?.MutatingAdmissionWebhook, "MutatingAdmissionWebhook", "a configuration"), d.webhooks ?? {}) }),
  ImagePolicyWebhook: (d) => ({ mutating: imagePolicyPlugin(needs(d.configs?.ImagePolicyWebhook, "ImagePolicyWebhook", "a configuration"), d.webhooks?.dial) }),
  EventRateLimit: (d) => ({ validating: eventRateLimitPlugin(needs(d.configs?.EventRateLimit, "EventRateLimit", "a configuration"), d.clock ?? systemClock) }),
  CertificateSubjectRestriction: () => ({ validating: csrSubjectRestrictionPlugin }),
  CertificateApproval: () => ({ validating: csrApprovalPlugin }),
  CertificateRevocation: () => ({ validating: csrRevocationPlugin }),
  CertificateSigning: () => ({ validating: csrSigningPlugin }),
  ClusterTrustBundleAttest: () => ({ validating: trustBundleAttestPlugin }),
  RBACEscalationPrevention: (d) => ({ validating: rbacEscalationPlugin(needs(d.lister, "RBACEscalationPrevention", "an RBAC lister")) }),
  // Last, as upstream: the webhooks see only writes every built-in check has let through.
  ValidatingAdmissionWebhook: (d) => ({ validating: webhookPlugin("Validating", needs(d.configs?.ValidatingAdmissionWebhook, "ValidatingAdmissionWebhook", "a configuration"), d.webhooks ?? {}) }),
};

/** The named plugins, split into the chain's two phases in chain order (whatever order `names` is in). */
export function admissionPlugins(names: readonly AdmissionPluginName[], deps: AdmissionPluginDeps = {}): { readonly mutating: MutatingPlugin[]; readonly validating: ValidatingPlugin[] } {
  const mutating: MutatingPlugin[] = [];
  const validating: ValidatingPlugin[] = [];
  for (const name of Object.keys(BUILD) as AdmissionPluginName[]) {
    if (!names.includes(name)) continue;
    const built = BUILD[name](deps);
    if ("mutating" in built) mutating.push(built.mutating);
    else validating.push(built.validating);
  }
  return { mutating, validating };
}

/** The plugins on by default that need nothing but the request: the certificate checks (tests build chains from these). */
export function defaultAdmissionPlugins(): { readonly mutating: MutatingPlugin[]; readonly validating: ValidatingPlugin[] } {
  const names = (Object.keys(ADMISSION_PLUGINS) as AdmissionPluginName[]).filter((n) => ADMISSION_PLUGINS[n].enabledByDefault && n !== "RBACEscalationPrevention");
  return admissionPlugins(names);
}
