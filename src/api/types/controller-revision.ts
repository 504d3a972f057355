// ControllerRevision (apps/v1): an immutable snapshot of serialized state data with a revision number.
import type { ApiObject, ApiList } from "../meta.js";

export const CONTROLLER_REVISION_KIND = "ControllerRevision";
export const CONTROLLER_REVISION_VERSION = "v1";

export interface ControllerRevision extends ApiObject {
  revision: number;
  /** Raw JSON the owner serializes and reads back itself; never changed after creation. */
  data?: unknown;
}

export type ControllerRevisionList = ApiList<ControllerRevision>;
