// TokenRequest: the body of the serviceaccounts/token action (never stored): expiration default and bounds, bound object kinds.
import type { ApiObject } from "../../../api/meta.js";
import { kindSchema } from "../../../api/schema.js";
import { TOKEN_REQUEST_KIND, type TokenRequestSpec } from "../../../api/types/authentication.js";
import type { FieldError, ResourceStrategy } from "../strategy.js";
import { invalid, notSupported, required } from "../validation.js";
import { buildStrategy, isRecord } from "./strategy-kit.js";

export const TOKEN_DEFAULT_EXPIRATION_SECONDS = 3600;
export const TOKEN_MIN_EXPIRATION_SECONDS = 600;
export const TOKEN_MAX_EXPIRATION_SECONDS = 2 ** 32;
export const BOUND_OBJECT_KINDS = ["Pod", "Secret"];

const spec = (obj: ApiObject): Partial<TokenRequestSpec> | undefined => obj.spec as Partial<TokenRequestSpec> | undefined;

/** Runs on the action's body: prepareForCreate (default lifetime, clear status) then validate. */
export const tokenRequestStrategy: ResourceStrategy = buildStrategy({
  schema: kindSchema(TOKEN_REQUEST_KIND),
  prepareForCreate(obj) {
    delete obj.status;
    if (obj.spec === undefined) obj.spec = {};
    if (isRecord(obj.spec) && obj.spec.expirationSeconds === undefined) obj.spec.expirationSeconds = TOKEN_DEFAULT_EXPIRATION_SECONDS;
  },
  validate(obj) {
    const s = spec(obj) ?? {};
    const errors: FieldError[] = [];
    const seconds = s.expirationSeconds ?? TOKEN_DEFAULT_EXPIRATION_SECONDS;
    if (seconds < TOKEN_MIN_EXPIRATION_SECONDS) errors.push(invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"));
    if (seconds > TOKEN_MAX_EXPIRATION_SECONDS) errors.push(invalid("spec.expirationSeconds", seconds, `may not specify a duration greater than ${TOKEN_MAX_EXPIRATION_SECONDS} seconds`));
    const ref = s.boundObjectRef;
    if (ref) {
      if (!BOUND_OBJECT_KINDS.includes(ref.kind ?? "")) errors.push(notSupported("spec.boundObjectRef.kind", ref.kind ?? "", BOUND_OBJECT_KINDS));
      if (!ref.name) errors.push(required("spec.boundObjectRef.name"));
    }
    return errors;
  },
});
