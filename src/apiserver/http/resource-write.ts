// A write request as the resource handler passes it on: its body decoded and field-validated, and the options that go with it.
import type { FastifyRequest } from "fastify";
import type { ApiObject, UserInfo } from "../../api/meta.js";
import type { GroupNames } from "../../api/group.js";
import type { SchemaRegistry } from "../../api/schema.js";
import { PlatformError } from "../../errors.js";
import type { ResourceDefinition } from "../registry/strategy.js";
import { ACTION_KINDS } from "../discovery.js";
import { fillTypeMeta } from "../registry/type-meta.js";
import { decodeBody, decodeYaml, isJsonType, isYamlType, mediaType } from "./content.js";
import { checkFields } from "./field-validation.js";
import type { WriteParams } from "./query.js";
import type { ResponseSettings } from "./respond.js";
import type { RequestHooks } from "../pipeline.js";

/** An action's body: an object whose apiVersion and kind, filled when missing, are the action's (as for any create). */
export function actionBody(body: unknown, action: string, names: GroupNames): ApiObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new PlatformError("BAD_REQUEST", "the request body must be a JSON or YAML object");
  const kind = ACTION_KINDS[action]?.(names);
  if (kind) fillTypeMeta(body as Record<string, unknown>, { apiVersion: `${kind.group ? `${kind.group}/` : ""}${kind.version}`, kind: kind.kind });
  return body as ApiObject;
}

/** Decodes a create/update body and applies fieldValidation; warnings go to the response. */
export function decodeChecked(req: FastifyRequest, schemas: SchemaRegistry, def: ResourceDefinition, w: WriteParams, out: ResponseSettings): unknown {
  const type = mediaType(req.headers["content-type"]);
  const raw = req.body as Buffer | undefined;
  const yaml = isYamlType(type);
  const body = yaml && w.fieldValidation === "Strict" ? decodeYaml(raw?.toString("utf8") ?? "", true) : decodeBody(raw, req.headers["content-type"]);
  const schema = schemas.lookup(def.group, def.kind);
  // A JSON body is the parse of its text, untouched yet: its key count can stand for the duplicate scan.
  const json = isJsonType(type) && raw ? { text: raw.toString("utf8"), decoded: body } : undefined;
  out.warnings.push(...checkFields(body, schema, w.fieldValidation, json));
  return body;
}

export function writeOptions(req: FastifyRequest, out: ResponseSettings, w: WriteParams, user: UserInfo, subresource: string | undefined) {
  return { dryRun: w.dryRun, fieldManager: w.fieldManager ?? defaultManager(req.headers["user-agent"]), user, subresource, ...annotator(req, out) };
}

/**
 * How admission annotates the request's audit event, when it is audited, adds warnings to the response, knows the
 * request's deadline, and counts its webhooks' time (which the request's SLI latency leaves out).
 */
export function annotator(req: FastifyRequest, out: ResponseSettings): RequestHooks & { readonly warn: (text: string) => void } {
  const audit = req.platformAudit;
  const warn = (text: string): void => void (out.warnings.includes(text) || out.warnings.push(text));
  const deadline = req.platformDeadline ?? undefined;
  const tracker = req.platformTracker;
  return {
    ...(audit && { annotate: (key: string, value: string) => audit.annotate(key, value) }),
    warn,
    ...(deadline && { deadline }),
    ...(tracker && { webhookTime: (seconds: number) => tracker.webhookTime(seconds) }),
  };
}

/** Upstream's default field manager: the User-Agent up to its first '/' (`kubectl` from `kubectl/v1.32.4 ...`). */
function defaultManager(userAgent: string | undefined): string | undefined {
  const name = userAgent?.split("/")[0]?.trim().slice(0, 128);
  return name ? name.replace(/[^\x20-\x7e]/g, "") || undefined : undefined;
}
