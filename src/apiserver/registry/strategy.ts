// The contract between the generic registry and one resource: its definition (names, scope, verbs, columns) and
// its strategy (defaults, validation, which fields the main resource and each subresource may change).
import type { ApiObject, TableColumnDefinition, UserInfo } from "../../api/meta.js";
import type { GroupNames } from "../../api/group.js";
import type { FieldError } from "../../api/field-errors.js";
import type { NameRule } from "../../api/names.js";
import type { StorageView } from "../storage/view.js";

export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete" | "deletecollection";

export type { FieldError } from "../../api/field-errors.js";

/** What a strategy may know about the request it serves. */
export interface StrategyContext {
  readonly now: Date;
  readonly names: GroupNames;
  /** The authenticated (or impersonated) requester; undefined only when authentication is off. */
  readonly user?: UserInfo;
  /** Subresource addressed by the request ("status", "approval", ...), undefined for the main resource. */
  readonly subresource?: string;
}

export interface SubresourceStrategy {
  /** Verbs served on the subresource (GET returns the parent object). */
  readonly verbs: readonly Verb[];
  /**
   * Copies onto `next` what this subresource must not change, taken from `previous`
   * (e.g. `/status` keeps spec and metadata except annotations/labels as upstream; `/approval` keeps everything but conditions).
   */
  prepareForUpdate(next: ApiObject, previous: ApiObject, ctx: StrategyContext): void;
  validateUpdate(next: ApiObject, previous: ApiObject, ctx: StrategyContext): FieldError[];
}

export interface ResourceStrategy {
  /** Defaults and server-set fields on create (e.g. clear CSR status). Mutates `obj`. */
  prepareForCreate(obj: ApiObject, ctx: StrategyContext): void;
  validate(obj: ApiObject, ctx: StrategyContext): FieldError[];
  /**
   * Work of the steps below begun before them where it costs the serving thread less (a CSR's signature checked on
   * another core while the create waits). It decides nothing and never throws: the synchronous steps judge as before,
   * only faster. Undefined when there is nothing to wait for.
   */
  checkAhead?(obj: ApiObject): Promise<void> | undefined;
  /** Main-resource update: e.g. keep status from `previous`. Mutates `next`. */
  prepareForUpdate(next: ApiObject, previous: ApiObject, ctx: StrategyContext): void;
  /** Update rules incl. immutability. Runs after validate(next). */
  validateUpdate(next: ApiObject, previous: ApiObject, ctx: StrategyContext): FieldError[];
  /** Whether a main-resource update changes what metadata.generation counts (usually spec). */
  specChanged?(next: ApiObject, previous: ApiObject): boolean;
  /** Subresources stored with the object, by name. */
  readonly subresources?: Readonly<Record<string, SubresourceStrategy>>;
  /**
   * A deletion in two steps (Namespace, as upstream): the first delete only marks the object (a deletionTimestamp,
   * and what `mark` sets); while `pending` holds, a delete answers the object as it is and no update removes it; the
   * update that ends `pending` (and leaves no metadata.finalizers) removes it.
   */
  readonly deletion?: {
    /** Sets what the first delete changes besides the deletionTimestamp; throws to refuse the delete. */
    mark(obj: ApiObject): void;
    pending(obj: ApiObject): boolean;
  };
}

/** Create-only resources (TokenReview, SelfSubjectReview, SubjectAccessReview) and action subresources (serviceaccounts/token). */
export type CreateHandler = (body: ApiObject, ctx: StrategyContext & { readonly namespace?: string; readonly name?: string }) => Promise<ApiObject>;

export interface ResourceDefinition {
  /** "" for the core group. Built from GroupNames so the suffix stays one setting. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  readonly namespaced: boolean;
  readonly verbs: readonly Verb[];
  /** Name rule: DNS-1123 subdomain (most kinds), DNS-1123 label (Namespace), or path segment (RBAC, CSR). */
  readonly nameRule: NameRule;
  /** Create-only kinds are never stored: create runs this handler (wired by the identity layer). */
  readonly createOnly?: boolean;
  /**
   * Extra field selectors beyond metadata.name / metadata.namespace, e.g. `spec.signerName`. Each returns a string
   * field of the object as it is (never a value made from others, nor a number or boolean as text): a selector's
   * value is looked for in the stored text before the object is decoded (`selectorTextHint`).
   */
  readonly fieldSelectors?: Readonly<Record<string, (obj: ApiObject) => string | undefined>>;
  /** Table output columns (NAME and AGE are added by the server when absent). */
  readonly columns?: readonly TableColumnDefinition[];
  /** False: no AGE column is added to `columns` (Events: upstream prints LAST SEEN and FIRST SEEN instead). */
  readonly addAge?: false;
  /** Cells for `columns`, in order. */
  readonly row?: (obj: ApiObject, now: Date) => unknown[];
  /** Delete of the main resource answers with the deleted object instead of a Status (ServiceAccount). */
  readonly deleteReturnsObject?: boolean;
  readonly strategy: ResourceStrategy;
  /** Objects kept under another resource's keys in that resource's form (core v1 Events over events v1). */
  readonly storedAs?: StorageView;
  /** Every write keeps the object for the server's event TTL only (`--event-ttl`; upstream's Events), then it is deleted. */
  readonly expiresWithEventTtl?: boolean;
  /** Action subresources that are not stored (serviceaccounts/token): name → handler slot filled by later layers. */
  readonly actions?: readonly string[];
}
