// The MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins: each matching webhook is sent an AdmissionReview
// (admission.<suffix>/v1) and its answer checked, applied (JSON Patch, mutating only) and enforced as upstream's dispatchers do.
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { ApiObject } from "../../api/meta.js";
import type { LabelSelector } from "../../api/types/rbac.js";
import type { AdmissionWebhook, WebhookAdmissionConfig, WebhookPhase } from "../../config/admission-webhooks.js";
import { conditionsHold } from "../../cel/index.js";
import { PlatformError, toPlatformError } from "../../errors.js";
import { applyJsonPatch } from "../patch/json.js";
import { labelSelectorMatches as selects } from "../selectors.js";
import { defaultUserAgent, DEFAULT_BURST, DEFAULT_NAMESPACE, DEFAULT_QPS } from "../../client/rest-config.js";
import { WebhookClient, type Dialer } from "../webhook/client.js";
import type { AdmissionAttributes, AdmissionContext, MutatingPlugin, ValidatingPlugin } from "./admission.js";

export interface WebhookPluginDeps {
  /** Labels of a namespace (undefined when it does not exist), for `namespaceSelector`. */
  readonly namespaceLabels?: (namespace: string) => Promise<Readonly<Record<string, string>> | undefined>;
  readonly dial?: Dialer;
}

/** Upstream's warning limits: an item is cut to 256 characters once the warnings pass 4096 in all. */
const WARNING_ITEM_CHARS = 256;
const WARNING_TOTAL_CHARS = 4096;

interface Hook {
  readonly spec: AdmissionWebhook;
  readonly index: number;
  readonly client: WebhookClient;
}

/** Builds the plugin of one phase; each webhook gets its own client (its CA, its timeout, one attempt as upstream). */
export function webhookPlugin(phase: "Mutating", config: WebhookAdmissionConfig, deps: WebhookPluginDeps): MutatingPlugin;
export function webhookPlugin(phase: "Validating", config: WebhookAdmissionConfig, deps: WebhookPluginDeps): ValidatingPlugin;
export function webhookPlugin(phase: WebhookPhase, config: WebhookAdmissionConfig, deps: WebhookPluginDeps): MutatingPlugin | ValidatingPlugin {
  const hooks: Hook[] = config.webhooks.map((spec, index) => ({
    spec,
    index,
    client: new WebhookClient({
      config: {
        server: spec.url,
        tls: { ...(spec.caBundle !== undefined && { ca: spec.caBundle }), ...spec.clientCert },
        credentials: spec.credentials ?? { type: "none" },
        namespace: DEFAULT_NAMESPACE,
        qps: DEFAULT_QPS,
        burst: DEFAULT_BURST,
        userAgent: defaultUserAgent("platform-ca-apiserver"),
      },
      timeoutMs: spec.timeoutSeconds * 1000,
      retry: { initialBackoffMs: 0, attempts: 1 },
      ...(deps.dial && { dial: deps.dial }),
    }),
  }));
  const name = `${phase}AdmissionWebhook`;
  return {
    name,
    async admit(a, obj, oldObj, ctx) {
      const matched: Hook[] = [];
      for (const h of hooks) if (await matches(h.spec, a, obj, oldObj, deps)) matched.push(h);
      if (matched.length === 0) return;
      if (phase === "Validating") {
        // As upstream, validating webhooks run in parallel; the first refusal in list order answers.
        const results = await Promise.allSettled(matched.map((h) => call(h, a, obj, oldObj, ctx, false)));
        for (const r of results) if (r.status === "rejected") throw r.reason;
        return;
      }
      // Mutating webhooks run in order; one already called is called once more (IfNeeded) when a later one changed the object.
      let changes = 0;
      const changesAfter = new Map<Hook, number>();
      for (const h of matched) {
        if (await call(h, a, obj, oldObj, ctx, true)) changes++;
        changesAfter.set(h, changes);
      }
      for (const h of matched) if (h.spec.reinvocationPolicy === "IfNeeded" && changes > changesAfter.get(h)!) await call(h, a, obj, oldObj, ctx, true, 1);
    },
  };
}

/** Rules, scope, then the selectors (the namespace looked up only when a selector needs it). */
async function matches(w: AdmissionWebhook, a: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined, deps: WebhookPluginDeps): Promise<boolean> {
  if (!w.rules.some((rule) => ruleMatches(rule, a))) return false;
  if (!selects(w.objectSelector, obj?.metadata.labels) && !selects(w.objectSelector, oldObj?.metadata.labels)) return false;
  if (isEmpty(w.namespaceSelector)) return true;
  // As upstream: a cluster-scoped object always matches, except a Namespace, which is matched by its own labels.
  if (a.group === "" && a.resource === "namespaces") return selects(w.namespaceSelector, (obj ?? oldObj)?.metadata.labels);
  if (!a.namespace) return true;
  return selects(w.namespaceSelector, (await deps.namespaceLabels?.(a.namespace)) ?? {});
}

function ruleMatches(rule: AdmissionWebhook["rules"][number], a: AdmissionAttributes): boolean {
  const any = (list: readonly string[], value: string): boolean => list.includes("*") || list.includes(value);
  if (!any(rule.operations, a.operation) || !any(rule.apiGroups, a.group) || !any(rule.apiVersions, a.version ?? "")) return false;
  if (rule.scope === "Cluster" && a.namespace) return false;
  if (rule.scope === "Namespaced" && !a.namespace) return false;
  // Upstream's resource patterns: "*" (resources, not subresources), "*/*", "pods/*", "*/status", "pods/status".
  return rule.resources.some((pattern) => {
    const [res, sub] = pattern.split("/", 2) as [string, string | undefined];
    if (res !== "*" && res !== a.resource) return false;
    if (sub === undefined) return a.subresource === undefined || a.subresource === "";
    return sub === "*" || sub === a.subresource;
  });
}

function isEmpty(s: LabelSelector): boolean {
  return Object.keys(s.matchLabels ?? {}).length === 0 && (s.matchExpressions ?? []).length === 0;
}

/** Upstream's refusal of a call that failed (connection, timeout, bad answer): 500 "failed calling webhook". */
function callFailed(w: AdmissionWebhook, why: string): PlatformError {
  return new PlatformError("INTERNAL", `Internal error occurred: failed calling webhook ${JSON.stringify(w.name)}: ${why}`, { details: { webhook: w.name } });
}

/** One round trip; returns whether the object was patched. Applies `failurePolicy` to a failed call. */
async function call(h: Hook, a: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined, ctx: AdmissionContext, mutating: boolean, round = 0): Promise<boolean> {
  const w = h.spec;
  // A dry run goes to every webhook: v1 allows only sideEffects None and NoneOnDryRun, refused otherwise at load, so
  // upstream's "does not support dry run" refusal (for Unknown and Some) cannot arise.
  const uid = randomUUID();
  const sent = review(uid, a, obj, oldObj, ctx);
  // Failed, under Ignore: logged, recorded in the audit event, and the request goes on without this webhook.
  const failed = (why: string): false => {
    if (w.failurePolicy !== "Ignore") throw callFailed(w, why);
    ctx.logger.warn({ webhook: w.name, error: why }, "admission webhook failed; ignored (failurePolicy Ignore)");
    a.annotate?.(`failed-open.${mutating ? "mutation" : "validating"}.webhook.admission.${ctx.names.suffix}/round_${round}_index_${h.index}`, w.name);
    return false;
  };
  // As upstream: any false condition skips the webhook; an evaluation error is a failed call.
  const request = sent.request;
  const holds = conditionsHold(w.matchConditions, (c) => c.matches({ object: request.object, oldObject: request.oldObject, request }), (c) => JSON.stringify(c.name));
  if (holds !== true) return holds === false ? false : failed(holds.error);
  // The request's time already spent (by earlier webhooks): no call, the failure policy decides.
  const signal = a.deadline?.signal;
  if (signal?.aborted) return failed(`failed to call webhook: ${(signal.reason as Error).message}`);
  let response: Record<string, unknown>;
  const started = performance.now();
  try {
    // The client's own timer is timeoutSeconds; the request's deadline can end the call sooner.
    const answer = await h.client.post(JSON.stringify(sent), signal);
    response = verify(answer.body, uid, mutating, ctx.names.suffix);
  } catch (err) {
    if (signal?.aborted) return failed(`failed to call webhook: ${(signal.reason as Error).message}`);
    const e = toPlatformError(err);
    return failed(e.message.startsWith("received invalid webhook response") ? e.message : `failed to call webhook: ${e.message}`);
  } finally {
    // Upstream's webhook latency tracker: the round trip, answered or not, is left out of the request's SLI latency.
    a.webhookTime?.((performance.now() - started) / 1000);
  }
  for (const [key, value] of Object.entries((response.auditAnnotations as Record<string, unknown> | undefined) ?? {})) {
    if (typeof value === "string") a.annotate?.(`${w.name}/${key}`, value);
  }
  addWarnings(a, response.warnings);
  if (response.allowed !== true) throw denied(w, a, response.status);
  if (!mutating) return false;
  // As upstream, each mutating call is recorded: which webhook, and whether it changed the object.
  const record = (mutated: boolean): boolean => {
    a.annotate?.(`mutation.webhook.admission.${ctx.names.suffix}/round_${round}_index_${h.index}`, JSON.stringify({ configuration: w.configurationName, webhook: w.name, mutated }));
    return mutated;
  };
  if (typeof response.patch !== "string" || !obj) return record(false);
  const before = JSON.stringify(obj);
  let patched: ApiObject;
  try {
    patched = applyJsonPatch(obj, JSON.parse(Buffer.from(response.patch, "base64").toString("utf8"))) as ApiObject;
  } catch (err) {
    throw callFailed(w, `received invalid webhook response: ${(err as Error).message}`);
  }
  // The chain holds `obj`: it is changed in place.
  for (const key of Object.keys(obj)) delete (obj as Record<string, unknown>)[key];
  Object.assign(obj, patched);
  return record(JSON.stringify(obj) !== before);
}

function review(uid: string, a: AdmissionAttributes, obj: ApiObject | undefined, oldObj: ApiObject | undefined, ctx: AdmissionContext): { request: Record<string, unknown> } & Record<string, unknown> {
  const kind = { group: a.group, version: a.version ?? "", kind: a.kind ?? "" };
  const resource = { group: a.group, version: a.version ?? "", resource: a.resource };
  const optionsKind = { CREATE: "CreateOptions", UPDATE: "UpdateOptions", DELETE: "DeleteOptions", CONNECT: undefined }[a.operation];
  return {
    apiVersion: `admission.${ctx.names.suffix}/v1`,
    kind: "AdmissionReview",
    request: {
      uid,
      kind,
      resource,
      ...(a.subresource && { subResource: a.subresource, requestSubResource: a.subresource }),
      requestKind: kind,
      requestResource: resource,
      ...(a.name && { name: a.name }),
      ...(a.namespace && { namespace: a.namespace }),
      operation: a.operation,
      userInfo: { username: a.user.username, ...(a.user.uid && { uid: a.user.uid }), ...(a.user.groups && { groups: a.user.groups }), ...(a.user.extra && { extra: a.user.extra }) },
      object: a.operation === "DELETE" ? null : (obj ?? null),
      oldObject: a.operation === "UPDATE" || a.operation === "DELETE" ? (oldObj ?? null) : null,
      dryRun: a.dryRun,
      options: optionsKind ? { apiVersion: "meta.k8s.io/v1", kind: optionsKind, ...(a.dryRun && { dryRun: ["All"] }) } : null,
    },
  };
}

/** Upstream's VerifyAdmissionResponse, with its messages. */
function verify(body: Buffer, uid: string, mutating: boolean, suffix: string): Record<string, unknown> {
  const bad = (why: string): PlatformError => new PlatformError("INTERNAL", `received invalid webhook response: ${why}`);
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw bad(`the answer is not JSON: ${(err as Error).message}`);
  }
  const r = (doc as { response?: unknown } | null)?.response;
  if (typeof r !== "object" || r === null || Array.isArray(r)) throw bad("webhook response was absent");
  const response = r as Record<string, unknown>;
  if (response.uid !== uid) throw bad(`expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(response.uid ?? "")}`);
  const gvk = `${(doc as { apiVersion?: unknown }).apiVersion}, Kind=${(doc as { kind?: unknown }).kind}`;
  if (gvk !== `admission.${suffix}/v1, Kind=AdmissionReview`) throw bad(`expected webhook response of admission.${suffix}/v1, Kind=AdmissionReview, got ${gvk}`);
  const patch = typeof response.patch === "string" ? response.patch : "";
  const patchType = typeof response.patchType === "string" ? response.patchType : "";
  if (patch || patchType) {
    if (!mutating) throw bad("validating webhook may not return response.patch or response.patchType");
    if (!patch) throw bad("webhook returned response.patchType but not response.patch");
    if (!patchType) throw bad("webhook returned response.patch but not response.patchType");
    if (patchType !== "JSONPatch") throw bad(`webhook returned invalid response.patchType of ${JSON.stringify(patchType)}`);
  }
  return response;
}

/**
 * Upstream's ToStatusErr: the webhook's `status.code` (403 when it gave none; one outside 400–599 is not an HTTP
 * error status and reads 403 too) and `status.reason` (else InternalError for a 500, Forbidden otherwise) reach the
 * client; the message is the webhook's message, or its reason, or "without explanation".
 */
function denied(w: AdmissionWebhook, a: AdmissionAttributes, status: unknown): PlatformError {
  const s = (typeof status === "object" && status !== null ? status : {}) as { code?: unknown; message?: unknown; reason?: unknown };
  const by = `admission webhook ${JSON.stringify(w.name)} denied the request`;
  const reason = typeof s.reason === "string" && s.reason ? s.reason : undefined;
  const why = typeof s.message === "string" && s.message ? s.message : reason;
  const code = typeof s.code === "number" && Number.isInteger(s.code) && s.code >= 400 && s.code < 600 ? s.code : 403;
  const internal = code === 500;
  return new PlatformError("FORBIDDEN", why ? `${by}: ${why}` : `${by} without explanation`, {
    httpStatus: code,
    reason: reason ?? (internal ? "InternalError" : "Forbidden"),
    // As upstream's NewForbidden details (a 500 carries none): the group, the resource as the kind, the name.
    details: { webhook: w.name, ...(!internal && { group: a.group, kind: a.resource, name: a.name ?? "Unknown" }) },
  });
}

/** Passes the webhook's warnings to the client: printable text, each cut to 256 characters once they pass 4096 in all. */
function addWarnings(a: AdmissionAttributes, warnings: unknown): void {
  if (!Array.isArray(warnings) || !a.warn) return;
  const texts = warnings.filter((w): w is string => typeof w === "string" && w.trim() !== "");
  const total = texts.reduce((n, t) => n + t.length, 0);
  let budget = WARNING_TOTAL_CHARS;
  for (const t of texts) {
    const text = total > WARNING_TOTAL_CHARS && t.length > WARNING_ITEM_CHARS ? t.slice(0, WARNING_ITEM_CHARS) : t;
    if (text.length > budget) break;
    budget -= text.length;
    a.warn(text);
  }
}
