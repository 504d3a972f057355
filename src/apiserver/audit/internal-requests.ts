// The server's own writes in the audit log (a namespace's content deleted, its conditions and its finalizer), one event
// per write as upstream's namespace controller's requests are audited: the user they run as, the path the request
// would have had, the policy's level and stages, and the outcome.
import { randomUUID } from "node:crypto";
import type { UserInfo } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import type { ResourceDefinition } from "../registry/strategy.js";
import { classify, statusOf } from "../http/status.js";
import type { Auditor } from "./auditor.js";

/** One write the server makes on its own, as the audit sees a request. */
export interface InternalRequest {
  readonly verb: "create" | "delete" | "update" | "patch";
  readonly def: ResourceDefinition;
  readonly namespace?: string;
  readonly name: string;
  readonly subresource?: string;
  readonly user: UserInfo;
  /** The part of the server making it, named in the events' user agent: `namespace controller`, `garbage collector`. */
  readonly component: string;
}

/** Runs `work` as the audited request `call`; `response` turns its result into the response object recorded. */
export type AuditInternal = <T>(call: InternalRequest, work: () => Promise<T>, response?: (result: T) => unknown) => Promise<T>;

/** What the events name as the writer's agent: `platform-ca-apiserver (<component>)`. */
const AGENT = "platform-ca-apiserver";

/** Without an auditor (none configured, or not yet): the work alone. */
export const UNAUDITED: AuditInternal = (_call, work) => work();

/** The URL path the request would have had: `/api/v1/namespaces/N/secrets/S`, `/apis/G/V/...`. */
export function requestPath(def: ResourceDefinition, namespace: string | undefined, name: string, subresource?: string): string {
  const base = def.group ? `/apis/${def.group}/${def.version}` : `/api/${def.version}`;
  return [base, def.namespaced && namespace ? `namespaces/${namespace}` : undefined, def.plural, name, subresource].filter(Boolean).join("/");
}

/**
 * Audits the server's own writes through the auditor `current()` answers at the time of each write (the registry is
 * built before the HTTP layer's auditor). As for a request, a RequestReceived event that cannot be stored stops the
 * write (the caller tries again later), and the outcome, refusals included, is the ResponseComplete event.
 */
export function auditInternal(current: () => Auditor | undefined): AuditInternal {
  return async <T,>(call: InternalRequest, work: () => Promise<T>, response?: (result: T) => unknown): Promise<T> => {
    const auditor = current();
    if (!auditor) return work();
    // A create is a POST to the collection: its path has no name.
    const path = requestPath(call.def, call.namespace, call.verb === "create" ? "" : call.name, call.subresource);
    const ctx = auditor.begin(
      {
        user: call.user,
        verb: call.verb,
        resourceRequest: true,
        path,
        group: call.def.group,
        version: call.def.version,
        resource: call.def.plural,
        ...(call.subresource !== undefined && { subresource: call.subresource }),
        ...(call.namespace !== undefined && call.def.namespaced && { namespace: call.namespace }),
        name: call.name,
      },
      () => ({ auditID: randomUUID(), requestURI: path, userAgent: `${AGENT} (${call.component})`, sourceIPs: [] }),
    );
    if (!ctx) return work();
    try {
      await ctx.received();
    } catch (err) {
      auditor.rejected();
      throw new PlatformError("INTERNAL", "failed to store the audit event", { cause: err });
    }
    let result: T;
    try {
      result = await work();
    } catch (err) {
      const status = statusOf(classify(err).error);
      await ctx.complete(status.code ?? 500, () => status).catch(() => undefined);
      throw err;
    }
    // The write is done: a sink failing now is counted and logged by the auditor, and the write stands.
    await ctx.complete(200, () => response?.(result)).catch(() => undefined);
    return result;
  };
}
