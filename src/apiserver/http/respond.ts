// Writing responses: negotiated encoding, pretty printing, Warning headers and the no-parse LIST body.
import type { FastifyReply } from "fastify";
import type { StoredObject } from "../registry/stored.js";
import { contentTypeOf, encode, type Negotiated } from "./content.js";

export interface ResponseSettings {
  readonly negotiated: Negotiated;
  readonly pretty: boolean;
  /** Warning texts, each sent as `Warning: 299 - "<text>"`. */
  readonly warnings: string[];
}

/**
 * A header value carries bytes, not text: every character past printable ASCII in a warning (a field name decoded
 * from `!!binary` YAML, say) is sent escaped as `\uXXXX`, or node refuses the whole response.
 */
function warningHeader(text: string): string {
  return `299 - ${JSON.stringify(text).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)}`;
}

export function send(reply: FastifyReply, code: number, value: unknown, s: ResponseSettings): FastifyReply {
  if (s.warnings.length > 0) reply.header("Warning", s.warnings.map(warningHeader));
  return reply.code(code).type(contentTypeOf(s.negotiated.format)).send(encode(value, s.negotiated.format, s.pretty));
}

/**
 * The result of a write: the JSON the registry stored (resourceVersion spliced in) when compact JSON of the object
 * itself is wanted, so the object is not serialized a second time; encoded like any value otherwise.
 */
export function sendWritten(reply: FastifyReply, result: { readonly code: number; readonly object: unknown; readonly json?: string }, s: ResponseSettings): FastifyReply {
  if (result.json === undefined || s.negotiated.format !== "json" || s.pretty || s.negotiated.table) return send(reply, result.code, result.object, s);
  if (s.warnings.length > 0) reply.header("Warning", s.warnings.map(warningHeader));
  return reply.code(result.code).type(contentTypeOf("json")).send(result.json);
}

/**
 * A List body assembled from the stored texts without parsing them; only for compact JSON. The items are
 * the stored bytes with resourceVersion spliced in, so a 10,000-item list costs string joins, not JSON work.
 */
export function sendRawList(reply: FastifyReply, head: { kind: string; apiVersion: string; metadata: object }, items: readonly StoredObject[]): FastifyReply {
  const parts = new Array<string>(items.length);
  for (let i = 0; i < items.length; i++) parts[i] = items[i]!.json();
  const body = `{"kind":${JSON.stringify(head.kind)},"apiVersion":${JSON.stringify(head.apiVersion)},"metadata":${JSON.stringify(head.metadata)},"items":[${parts.join(",")}]}`;
  return reply.code(200).type("application/json").send(body);
}
