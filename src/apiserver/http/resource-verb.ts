// A resource request's verb from its method and path, as authorization and audit see it, before any handler runs.
import { PlatformError } from "../../errors.js";
import type { Verb } from "../registry/strategy.js";
import type { Target } from "./routes.js";

export type ResourceTarget = Extract<Target, { type: "resource" }>;

const methodNotAllowed = (method: string, what: string) =>
  new PlatformError("METHOD_NOT_ALLOWED", `the server does not allow this method on the requested resource: ${method} ${what}`);

/** The request's verb, as authorization sees it; 405 when the path does not take this method. */
export function verbOf(method: string, t: ResourceTarget, watch: boolean): Verb | "action" {
  const def = t.def;
  const what = `${def.plural}${t.subresource ? `/${t.subresource}` : ""}`;
  let verb: Verb | "action" | undefined;
  if (t.subresource !== undefined) {
    if (def.actions?.includes(t.subresource)) verb = method === "POST" ? "action" : undefined;
    else {
      const sub = def.strategy.subresources?.[t.subresource];
      if (!sub) throw new PlatformError("NOT_FOUND", `the server could not find the requested resource (${what})`);
      const v = ({ GET: "get", PUT: "update", PATCH: "patch" } as const)[method as "GET"];
      verb = v && sub.verbs.includes(v) ? v : undefined;
    }
  } else if (t.name !== undefined) {
    verb = ({ GET: "get", PUT: "update", PATCH: "patch", DELETE: "delete" } as const)[method as "GET"];
  } else {
    verb = ({ GET: watch ? "watch" : "list", POST: "create", DELETE: "deletecollection" } as const)[method as "GET"];
  }
  if (verb === undefined) throw methodNotAllowed(method, what);
  const served: readonly string[] = def.createOnly ? ["create"] : def.verbs;
  if (verb !== "action" && t.subresource === undefined && !served.includes(verb)) {
    throw methodNotAllowed(method, what);
  }
  return verb;
}
