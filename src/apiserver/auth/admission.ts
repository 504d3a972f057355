// Admission: an ordered chain of mutating then validating plugins run on every write before it is stored.
import type { GroupNames } from "../../api/group.js";
import type { ApiObject, UserInfo } from "../../api/meta.js";
import { PlatformError, toPlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { requestHooks, type RequestAttributes, type RequestHooks } from "../pipeline.js";
import type { Authorizer } from "./authorizer.js";
import type { Deadline } from "../webhook/deadline.js";

export type AdmissionOperation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

export interface AdmissionAttributes extends RequestHooks {
  readonly operation: AdmissionOperation;
  /** API group; "" for the core group. */
  readonly group: string;
  readonly version?: string;
  /** Plural resource name, e.g. `certificatesigningrequests`. */
  readonly resource: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly kind?: string;
  readonly user: UserInfo;
  readonly dryRun: boolean;
}

export interface AdmissionContext {
  readonly names: GroupNames;
  /** Asked for the extra permissions some writes need (approve, sign, attest). */
  readonly authorizer: Authorizer;
  readonly logger: Logger;
}

/** May change `obj`; throws a PlatformError to refuse. Runs before every validating plugin. */
export interface MutatingPlugin {
  readonly name: string;
  admit(attributes: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined, ctx: AdmissionContext): void | Promise<void>;
}

/** Must not change `obj`; throws a PlatformError to refuse. */
export interface ValidatingPlugin {
  readonly name: string;
  admit(attributes: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined, ctx: AdmissionContext): void | Promise<void>;
}

export interface AdmissionChainOptions {
  readonly names: GroupNames;
  readonly authorizer: Authorizer;
  readonly mutating?: readonly MutatingPlugin[];
  readonly validating?: readonly ValidatingPlugin[];
  readonly logger?: Logger;
}

/** The pipeline's request attributes (verb `create`/`update`/`delete`, or `connect`) as admission attributes. */
export function admissionAttributes(a: Omit<RequestAttributes, "resourceRequest" | "path">): AdmissionAttributes {
  const operation = ({ create: "CREATE", update: "UPDATE", patch: "UPDATE", delete: "DELETE", deletecollection: "DELETE", connect: "CONNECT" } as const)[
    a.verb as "create"
  ];
  if (operation === undefined) throw new PlatformError("INTERNAL", `admission has no operation for the verb ${JSON.stringify(a.verb)}`);
  return {
    operation,
    group: a.group ?? "",
    resource: a.resource ?? "",
    user: a.user,
    dryRun: a.dryRun === true,
    ...(a.version !== undefined && { version: a.version }),
    ...(a.subresource !== undefined && { subresource: a.subresource }),
    ...(a.namespace !== undefined && { namespace: a.namespace }),
    ...(a.name !== undefined && { name: a.name }),
    ...(a.kind !== undefined && { kind: a.kind }),
    ...requestHooks(a),
  };
}

export class AdmissionChain {
  /** The mutating plugins in order, then the validating ones. */
  readonly #plugins: readonly (MutatingPlugin | ValidatingPlugin)[];
  readonly #ctx: AdmissionContext;

  constructor(options: AdmissionChainOptions) {
    this.#plugins = [...(options.mutating ?? []), ...(options.validating ?? [])];
    this.#ctx = { names: options.names, authorizer: options.authorizer, logger: options.logger ?? silentLogger() };
  }

  /**
   * Every mutating plugin in order, then every validating one; the first refusal stops the chain (thrown, or the
   * returned promise rejected). Plugins with nothing to check for a write answer at once: the chain waits only from the
   * first one that returns a promise, so most writes pass it without a promise per plugin (five writes per CSR, seven
   * plugins by default).
   */
  admit(attributes: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined): void | Promise<void> {
    const plugins = this.#plugins;
    for (let i = 0; i < plugins.length; i++) {
      const pending = this.#run(plugins[i]!, attributes, obj, oldObj);
      if (pending !== undefined) return this.#finish(pending, i + 1, attributes, obj, oldObj);
    }
  }

  async #finish(pending: Promise<void>, next: number, attributes: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined): Promise<void> {
    const plugins = this.#plugins;
    await pending;
    for (let i = next; i < plugins.length; i++) await this.#run(plugins[i]!, attributes, obj, oldObj);
  }

  /** One plugin: undefined when it has answered, else its promise; a refusal is logged and thrown (or rejected) as a PlatformError. */
  #run(plugin: MutatingPlugin | ValidatingPlugin, attributes: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined): Promise<void> | undefined {
    let pending: void | Promise<void>;
    try {
      pending = plugin.admit(attributes, obj, oldObj, this.#ctx);
    } catch (err) {
      throw this.#refused(plugin, attributes, err);
    }
    return pending === undefined ? undefined : pending.catch((err: unknown) => Promise.reject(this.#refused(plugin, attributes, err)));
  }

  #refused(plugin: MutatingPlugin | ValidatingPlugin, attributes: AdmissionAttributes, err: unknown): PlatformError {
    const e = toPlatformError(err);
    this.#ctx.logger.debug({ plugin: plugin.name, code: e.code, resource: attributes.resource, name: attributes.name, user: attributes.user.username }, "admission refused a write");
    return e;
  }
}

/**
 * Refuses (FORBIDDEN: `user not permitted to <what> "<signerName>"`) unless the user may `verb` the signer, then records
 * `annotation` with the signer's name in the audit event. The waiting part of the signer plugins, which decide
 * synchronously whether a write concerns them.
 */
export async function requireSignerPermission(
  a: AdmissionAttributes,
  ctx: AdmissionContext,
  verb: string,
  signerName: unknown,
  what: string,
  annotation?: string,
): Promise<void> {
  if (typeof signerName !== "string" || !(await authorizedForSigner(ctx, a.user, verb, signerName, a.deadline))) {
    throw admissionForbidden(a, `user not permitted to ${what} ${JSON.stringify(signerName ?? "")}`);
  }
  if (annotation !== undefined) a.annotate?.(annotation, signerName);
}

/** Whether `verb` is allowed on `signers` named `signerName` or its `<domain>/*` (certificates group), as upstream. */
export async function authorizedForSigner(ctx: AdmissionContext, user: UserInfo, verb: string, signerName: string, deadline?: Deadline): Promise<boolean> {
  // Within the request's deadline: a webhook authorizer asked here shares it with the request's other webhooks.
  const base = { user, verb, resourceRequest: true, group: ctx.names.certificates, resource: "signers", ...(deadline && { deadline }) } as const;
  if ((await ctx.authorizer.authorize({ ...base, name: signerName })).allowed) return true;
  const slash = signerName.indexOf("/");
  if (slash <= 0) return false;
  return (await ctx.authorizer.authorize({ ...base, name: `${signerName.slice(0, slash)}/*` })).allowed;
}

/** Whether a write addresses `resource` of the certificates group (optionally a subresource of it). */
export function targets(a: AdmissionAttributes, names: GroupNames, resource: string, subresource?: string): boolean {
  return a.group === names.certificates && a.resource === resource && a.subresource === subresource;
}

/** `obj.spec` as a record, or undefined when the body has no object spec (validation reports that). */
export function specOf(obj: ApiObject | undefined): Record<string, unknown> | undefined {
  const spec = obj?.spec;
  return typeof spec === "object" && spec !== null && !Array.isArray(spec) ? (spec as Record<string, unknown>) : undefined;
}

/** FORBIDDEN as upstream admission words it: `certificatesigningrequests.certificates.platform.io "x" is forbidden: <why>`. */
export function admissionForbidden(a: AdmissionAttributes, why: string): PlatformError {
  const qualified = a.group ? `${a.resource}.${a.group}` : a.resource;
  const prefix = a.name ? `${qualified} ${JSON.stringify(a.name)}` : qualified;
  return new PlatformError("FORBIDDEN", `${prefix} is forbidden: ${why}`, { details: { name: a.name ?? "", group: a.group, kind: a.resource } });
}
