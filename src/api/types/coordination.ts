// Lease (coordination group, v1): the record leader election writes and renews.
import type { ApiObject, ApiList } from "../meta.js";

export const LEASE_KIND = "Lease";
export const LEASE_VERSION = "v1";

export interface LeaseSpec {
  holderIdentity?: string;
  /** Greater than 0 when set. */
  leaseDurationSeconds?: number;
  /** MicroTime values. */
  acquireTime?: string;
  renewTime?: string;
  /** 0 or more when set. */
  leaseTransitions?: number;
  strategy?: string;
  preferredHolder?: string;
}

export interface Lease extends ApiObject {
  spec?: LeaseSpec;
}

export type LeaseList = ApiList<Lease>;
