// The defaults and validation of a create-only body (reviews, TokenRequest), which the generic create path leaves to its handler.
import type { ApiObject } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import { invalid } from "../registry/errors.js";
import type { ResourceDefinition, ResourceStrategy, StrategyContext } from "../registry/strategy.js";
import { copyPlain } from "../../plain-data.js";

/** A deep copy of `body` after the strategy's prepareForCreate; INVALID (with field causes) when validation fails. */
export function checkCreateBody(strategy: ResourceStrategy, what: Pick<ResourceDefinition, "group" | "kind">, body: ApiObject, ctx: StrategyContext): ApiObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new PlatformError("BAD_REQUEST", "the request body must be an object");
  const obj = copyPlain(body);
  if (typeof obj.metadata !== "object" || obj.metadata === null || Array.isArray(obj.metadata)) obj.metadata = {};
  strategy.prepareForCreate(obj, ctx);
  const errors = strategy.validate(obj, ctx);
  if (errors.length > 0) throw invalid(what as ResourceDefinition, obj.metadata.name ?? "", errors);
  return obj;
}
