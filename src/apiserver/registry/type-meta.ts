// The apiVersion and kind of a request body, one rule for every endpoint: missing ones are the endpoint's, as
// upstream's decoder fills them from the endpoint's version and kind; present ones must be the endpoint's (400).
import { badRequest } from "./errors.js";

export interface TypeMeta {
  readonly apiVersion: string;
  readonly kind: string;
}

const missing = (v: unknown) => v === undefined || v === null || v === "";

/** Fills `body`'s missing apiVersion and kind from `expected`; a 400 when either names something else. */
export function fillTypeMeta(body: Record<string, unknown>, expected: TypeMeta): void {
  if (missing(body.apiVersion)) body.apiVersion = expected.apiVersion;
  if (missing(body.kind)) body.kind = expected.kind;
  if (body.kind !== expected.kind || body.apiVersion !== expected.apiVersion) {
    throw badRequest(`the API version and kind in the body (${String(body.apiVersion)}, ${String(body.kind)}) do not match the endpoint (${expected.apiVersion}, ${expected.kind})`);
  }
}
