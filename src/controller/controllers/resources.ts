// The API resources the controllers read and write, addressed through one REST client for one group suffix.
import type { GroupNames } from "../../api/group.js";
import type { SubjectAccessReview } from "../../api/types/authorization.js";
import { CSR_VERSION, type CertificateSigningRequest } from "../../api/types/csr.js";
import { EVENT_VERSION, type Event } from "../../api/types/event.js";
import { LEASE_VERSION, type Lease } from "../../api/types/coordination.js";
import { AUTHORIZATION_VERSION } from "../../api/types/authorization.js";
import { CLUSTER_TRUST_BUNDLE_VERSION, type ClusterTrustBundle } from "../../api/types/trust-bundle.js";
import type { ResourceClient } from "../../client/types.js";
import type { ApiObject } from "../../api/meta.js";

/** What the controllers need of a REST client (`createClient(...)` gives one). */
export interface ResourceSource {
  resource<T extends ApiObject>(ref: { group: string; version: string; plural: string; namespaced: boolean }): ResourceClient<T>;
}

export interface ControllerResources {
  readonly csrs: ResourceClient<CertificateSigningRequest>;
  readonly trustBundles: ResourceClient<ClusterTrustBundle>;
  readonly events: ResourceClient<Event>;
  readonly leases: ResourceClient<Lease>;
  /** Create-only: POST answers with the review's status filled in. */
  readonly subjectAccessReviews: ResourceClient<SubjectAccessReview>;
}

export function controllerResources(client: ResourceSource, names: GroupNames): ControllerResources {
  return {
    csrs: client.resource({ group: names.certificates, version: CSR_VERSION, plural: "certificatesigningrequests", namespaced: false }),
    trustBundles: client.resource({ group: names.certificates, version: CLUSTER_TRUST_BUNDLE_VERSION, plural: "clustertrustbundles", namespaced: false }),
    events: client.resource({ group: names.events, version: EVENT_VERSION, plural: "events", namespaced: true }),
    leases: client.resource({ group: names.coordination, version: LEASE_VERSION, plural: "leases", namespaced: true }),
    subjectAccessReviews: client.resource({ group: names.authorization, version: AUTHORIZATION_VERSION, plural: "subjectaccessreviews", namespaced: false }),
  };
}
