// Every resource the embedded API server serves, built for one group suffix.
import type { GroupNames } from "../../../api/group.js";
import type { ResourceDefinition } from "../strategy.js";
import { clusterRoleBindingDefinition } from "./cluster-role-binding.js";
import { clusterRoleDefinition } from "./cluster-role.js";
import { certificateRevocationDefinition } from "./certificate-revocation.js";
import { clusterTrustBundleDefinition } from "./cluster-trust-bundle.js";
import { configMapDefinition } from "./config-map.js";
import { controllerRevisionDefinition } from "./controller-revision.js";
import { coreEventDefinition } from "./core-event.js";
import { csrDefinition } from "./csr.js";
import { eventDefinition } from "./event.js";
import { leaseDefinition } from "./lease.js";
import { namespaceDefinition } from "./namespace.js";
import { podDefinition } from "./pod.js";
import { roleBindingDefinition } from "./role-binding.js";
import { roleDefinition } from "./role.js";
import { secretDefinition } from "./secret.js";
import { selfSubjectAccessReviewDefinition } from "./self-subject-access-review.js";
import { selfSubjectReviewDefinition } from "./self-subject-review.js";
import { selfSubjectRulesReviewDefinition } from "./self-subject-rules-review.js";
import { serviceAccountDefinition } from "./service-account.js";
import { subjectAccessReviewDefinition } from "./subject-access-review.js";
import { tokenReviewDefinition } from "./token-review.js";

export { tokenRequestStrategy } from "./token-request.js";

export function allResources(names: GroupNames): ResourceDefinition[] {
  return [
    namespaceDefinition(),
    serviceAccountDefinition(),
    secretDefinition(),
    configMapDefinition(),
    podDefinition(),
    tokenReviewDefinition(names),
    selfSubjectReviewDefinition(names),
    subjectAccessReviewDefinition(names),
    selfSubjectAccessReviewDefinition(names),
    selfSubjectRulesReviewDefinition(names),
    csrDefinition(names),
    clusterTrustBundleDefinition(names),
    certificateRevocationDefinition(names),
    roleDefinition(names),
    clusterRoleDefinition(names),
    roleBindingDefinition(names),
    clusterRoleBindingDefinition(names),
    controllerRevisionDefinition(names),
    eventDefinition(names),
    // After the events group's Event: lookups by kind name alone find that one first.
    coreEventDefinition(names),
    leaseDefinition(names),
  ];
}
