// Request paths → what they address: discovery documents, health checks, metrics, or a resource collection/object/subresource.
import type { UserInfo } from "../../api/meta.js";
import type { ResourceDefinition } from "../registry/strategy.js";
import { listParams, type RawQuery } from "./query.js";

export type Target =
  | { readonly type: "root" }
  | { readonly type: "version" }
  /** An endpoint, or one of its checks (`/readyz/storage`) when `name` is set. */
  | { readonly type: "health"; readonly check: "healthz" | "livez" | "readyz"; readonly name?: string }
  | { readonly type: "metrics" }
  | { readonly type: "apiVersions" }
  | { readonly type: "apiGroupList" }
  | { readonly type: "apiGroup"; readonly group: string }
  | { readonly type: "resourceList"; readonly group: string; readonly version: string }
  | { readonly type: "openapiV2" }
  | { readonly type: "openapiIndex" }
  | { readonly type: "openapi"; readonly group: string; readonly version: string }
  | {
      readonly type: "resource";
      readonly def: ResourceDefinition;
      readonly namespace?: string;
      readonly name?: string;
      readonly subresource?: string;
    };

/** What the server serves, as routing needs it. */
export interface ServedApis {
  definition(group: string, version: string, plural: string): ResourceDefinition | undefined;
  hasGroup(group: string): boolean;
  hasVersion(group: string, version: string): boolean;
}

function decode(segment: string): string | undefined {
  // Most segments have no escape: decodeURIComponent (and its try) only for those that do.
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Undefined for paths nothing is served at (answered 404). */
export function route(path: string, apis: ServedApis): Target | undefined {
  const raw = path.split("?")[0]!.split("/").filter((s, i) => i > 0 && s !== "");
  const segs: string[] = [];
  for (const s of raw) {
    const d = decode(s);
    if (d === undefined) return undefined;
    segs.push(d);
  }
  const [first, second, third] = segs;
  if (segs.length === 0) return { type: "root" };
  if (first === "version" && segs.length === 1) return { type: "version" };
  if (first === "healthz" || first === "livez" || first === "readyz") {
    return segs.length === 1 ? { type: "health", check: first } : segs.length === 2 ? { type: "health", check: first, name: second! } : undefined;
  }
  if (first === "metrics" && segs.length === 1) return { type: "metrics" };
  if (first === "openapi" && second === "v2" && segs.length === 2) return { type: "openapiV2" };
  if (first === "openapi" && second === "v3") return openApiPath(segs.slice(2), apis);
  if (first === "api") {
    if (segs.length === 1) return { type: "apiVersions" };
    if (second !== "v1") return undefined;
    if (segs.length === 2) return { type: "resourceList", group: "", version: "v1" };
    return resourcePath("", "v1", segs.slice(2), apis);
  }
  if (first === "apis") {
    if (segs.length === 1) return { type: "apiGroupList" };
    if (!apis.hasGroup(second!)) return undefined;
    if (segs.length === 2) return { type: "apiGroup", group: second! };
    if (!apis.hasVersion(second!, third!)) return undefined;
    if (segs.length === 3) return { type: "resourceList", group: second!, version: third! };
    return resourcePath(second!, third!, segs.slice(3), apis);
  }
  return undefined;
}

/** `/openapi/v3`, `/openapi/v3/api/v1`, `/openapi/v3/apis/{group}/{version}`. */
function openApiPath(rest: string[], apis: ServedApis): Target | undefined {
  if (rest.length === 0) return { type: "openapiIndex" };
  if (rest.length === 2 && rest[0] === "api" && apis.hasVersion("", rest[1]!)) return { type: "openapi", group: "", version: rest[1]! };
  if (rest.length === 3 && rest[0] === "apis" && apis.hasVersion(rest[1]!, rest[2]!)) return { type: "openapi", group: rest[1]!, version: rest[2]! };
  return undefined;
}

/**
 * `plural[/name[/sub]]` or `namespaces/NS/plural[/name[/sub]]`. `namespaces/NAME/status` addresses the Namespace
 * object's subresource: a third segment is a namespaced plural only when this group/version serves one by that name.
 */
function resourcePath(group: string, version: string, rest: string[], apis: ServedApis): Target | undefined {
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const def = apis.definition(group, version, rest[2]!);
    if (def?.namespaced && rest.length <= 5) {
      return { type: "resource", def, namespace: rest[1], ...(rest[3] !== undefined ? { name: rest[3] } : {}), ...(rest[4] !== undefined ? { subresource: rest[4] } : {}) };
    }
  }
  const def = apis.definition(group, version, rest[0]!);
  if (!def || rest.length > 3) return undefined;
  // A namespaced kind at the top level is the all-namespaces collection only: objects need their namespace.
  if (def.namespaced && rest.length > 1) return undefined;
  return { type: "resource", def, ...(rest[1] !== undefined ? { name: rest[1] } : {}), ...(rest[2] !== undefined ? { subresource: rest[2] } : {}) };
}

/** Whether a GET of a collection asks to watch it. */
export const isWatch = (method: string, query: RawQuery, target: Extract<Target, { type: "resource" }>): boolean =>
  method === "GET" && target.name === undefined && listParams(query).watch;

/** A resource request's attributes, as authorization and audit see them (an action is a create). */
export function resourceAttributes(path: string, target: Extract<Target, { type: "resource" }>, verb: string, user: UserInfo) {
  return {
    user,
    verb: verb === "action" ? "create" : verb,
    resourceRequest: true,
    path,
    group: target.def.group,
    version: target.def.version,
    resource: target.def.plural,
    subresource: target.subresource,
    namespace: target.namespace,
    name: target.name,
  };
}
