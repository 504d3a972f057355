// Content negotiation: the Accept list (JSON, YAML, Table), request body decoding and response encoding.
import { parseAllDocuments, stringify as stringifyYaml } from "yaml";
import { PlatformError } from "../../errors.js";
import { NESTING_MESSAGE, YAML_READ, parsePlainJson, parseYaml, plainYamlValue } from "../../plain-data.js";
import { decodeProtobufObject } from "./protobuf.js";

export type Format = "json" | "yaml";

export interface Negotiated {
  readonly format: Format;
  /** Set when the client asked for a meta.k8s.io Table (kubectl's `get`), with the Table's version. */
  readonly table?: "v1" | "v1beta1";
}

interface MediaRange {
  readonly type: string;
  readonly params: Readonly<Record<string, string>>;
  readonly q: number;
  readonly order: number;
}

/** The Table media-type parameters kubectl sends; `meta.k8s.io` is kubectl's protocol constant, not our API group. */
const TABLE_GROUP = "meta.k8s.io";

export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header || header.trim() === "") return [];
  return header
    .split(",")
    .map((part, order) => {
      const [type = "", ...rest] = part.split(";").map((s) => s.trim());
      const params: Record<string, string> = {};
      for (const p of rest) {
        const eq = p.indexOf("=");
        if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
      }
      const q = params.q === undefined ? 1 : Number(params.q);
      return { type: type.toLowerCase(), params, q: Number.isFinite(q) ? q : 0, order };
    })
    .filter((r) => r.type !== "" && r.q > 0)
    .sort((a, b) => b.q - a.q || a.order - b.order);
}

/**
 * Picks the first acceptable representation. Alternatives we cannot produce (protobuf, aggregated discovery,
 * PartialObjectMetadata) are skipped so the client's fallback (plain JSON) wins, as kubectl expects.
 */
export function negotiate(header: string | undefined, tableAllowed: boolean): Negotiated {
  const ranges = parseAccept(header);
  if (ranges.length === 0) return { format: "json" };
  for (const r of ranges) {
    const as = r.params.as;
    if (r.type === "application/json") {
      if (as === undefined) return { format: "json" };
      if (as === "Table" && tableAllowed && r.params.g === TABLE_GROUP && (r.params.v === "v1" || r.params.v === "v1beta1")) {
        return { format: "json", table: r.params.v };
      }
      continue;
    }
    if (as !== undefined) continue;
    if (r.type === "application/yaml") return { format: "yaml" };
    if (r.type === "*/*" || r.type === "application/*") return { format: "json" };
  }
  throw new PlatformError("NOT_ACCEPTABLE", `none of the requested media types can be served: ${header}; use application/json or application/yaml`);
}

/** Media type of a request body without parameters, lower-cased ("" when absent). */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

const YAML_TYPES = new Set(["application/yaml", "application/x-yaml", "text/yaml"]);
const JSON_TYPES = new Set(["", "application/json", "text/json"]);
const PROTOBUF = "application/vnd.kubernetes.protobuf";

/** Decodes a JSON text (no prototype keys); errors are 400s naming the problem. */
export function decodeJson(text: string): unknown {
  try {
    return parsePlainJson(text);
  } catch (err) {
    throw bodyError("JSON", err);
  }
}

/** Decodes a create/update body by its Content-Type (JSON or YAML). */
export function decodeBody(raw: Buffer | undefined, contentType: string | undefined): unknown {
  const type = mediaType(contentType);
  const text = raw ? raw.toString("utf8") : "";
  if (text.trim() === "") throw new PlatformError("BAD_REQUEST", "the request body is empty; expected an object");
  if (JSON_TYPES.has(type)) return decodeJson(text);
  if (YAML_TYPES.has(type)) return decodeYaml(text);
  if (type === PROTOBUF && raw) return decodeProtobufObject(raw);
  throw new PlatformError("UNSUPPORTED_MEDIA_TYPE", `the body's media type ${JSON.stringify(type)} is not supported; use application/json or application/yaml`);
}

export function isJsonType(type: string): boolean {
  return JSON_TYPES.has(type);
}

export function isYamlType(type: string): boolean {
  return YAML_TYPES.has(type);
}

/** Decodes one YAML document; `uniqueKeys` refuses repeated keys (fieldValidation=Strict). */
export function decodeYaml(text: string, uniqueKeys = false): unknown {
  let docs;
  try {
    docs = parseYaml(text, () => parseAllDocuments(text, { ...YAML_READ, uniqueKeys }));
  } catch (err) {
    throw bodyError("YAML", err);
  }
  const list = Array.isArray(docs) ? docs : [docs];
  if (list.length !== 1) throw new PlatformError("BAD_REQUEST", `the request body must hold exactly one YAML document, got ${list.length}`);
  // The stored form is JSON, so YAML-only values (tags, non-string keys) are normalized here.
  try {
    return plainYamlValue(list[0]!);
  } catch (err) {
    throw bodyError("YAML", err);
  }
}

/** The 400 of a body that does not decode; nesting beyond the bound is named as such, not as a syntax error. */
function bodyError(format: "JSON" | "YAML", err: unknown): PlatformError {
  const message = (err as Error).message;
  return new PlatformError("BAD_REQUEST", message === NESTING_MESSAGE ? `the request body is refused: ${message}` : `the request body is not valid ${format}: ${message}`);
}

export function encode(value: unknown, format: Format, pretty: boolean): string {
  if (format === "yaml") return stringifyYaml(value, { lineWidth: 0 });
  return pretty ? `${JSON.stringify(value, null, 2)}\n` : JSON.stringify(value);
}

export function contentTypeOf(format: Format): string {
  return format === "yaml" ? "application/yaml" : "application/json";
}

