// The Swagger 2.0 document in gnostic's OpenAPIv2 protobuf encoding, the only form kubectl asks /openapi/v2 for.
// Field numbers are those of gnostic's openapiv2/OpenAPIv2.proto; only the fields the documents use are written.

type Json = Record<string, unknown>;
/** A field: its number and value (a sub-message is a Buffer; false, "" and undefined are proto3 defaults, left out). */
type Field = readonly [number, string | boolean | Buffer | undefined];

function varint(n: number): Buffer {
  const bytes: number[] = [];
  for (; n > 0x7f; n = Math.floor(n / 128)) bytes.push((n & 0x7f) | 0x80);
  bytes.push(n);
  return Buffer.from(bytes);
}

function message(fields: readonly Field[]): Buffer {
  const parts: Buffer[] = [];
  for (const [n, value] of fields) {
    if (value === undefined || value === false || value === "") continue;
    if (value === true) {
      parts.push(varint(n << 3), varint(1));
      continue;
    }
    const bytes = typeof value === "string" ? Buffer.from(value, "utf8") : value;
    parts.push(varint((n << 3) | 2), varint(bytes.length), bytes);
  }
  return Buffer.concat(parts);
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const strings = (n: number, v: unknown): Field[] => (Array.isArray(v) ? v.map((s) => [n, String(s)] as const) : []);

/** `x-` keys as NamedAny entries whose Any holds the value as YAML (JSON is YAML), as kubectl reads them. */
const vendorExtensions = (n: number, obj: Json): Field[] =>
  Object.entries(obj)
    .filter(([k]) => k.startsWith("x-"))
    .map(([k, v]) => [n, message([[1, k], [2, message([[2, `${JSON.stringify(v)}\n`]])]])] as const);

function schema(s: Json): Buffer {
  const properties = s.properties as Record<string, Json> | undefined;
  return message([
    [1, str(s.$ref)],
    [2, str(s.format)],
    [4, str(s.description)],
    ...strings(19, s.required),
    [21, s.additionalProperties ? message([[1, schema(s.additionalProperties as Json)]]) : undefined],
    [22, s.type ? message([[1, String(s.type)]]) : undefined],
    [23, s.items ? message([[1, schema(s.items as Json)]]) : undefined],
    ...((s.allOf as Json[] | undefined) ?? []).map((a) => [24, schema(a)] as const),
    [25, properties ? message(Object.entries(properties).map(([k, v]) => [1, message([[1, k], [2, schema(v)]])] as const)) : undefined],
    ...vendorExtensions(31, s),
  ]);
}

function parameter(p: Json): Buffer {
  const inner =
    p.in === "body"
      ? message([[1, message([[2, str(p.name)], [3, "body"], [4, p.required === true], [5, schema(p.schema as Json)]])]])
      : message([[2, message([[3, message([[2, str(p.in)], [4, str(p.name)], [6, str(p.type)], [20, p.uniqueItems === true]])]])]]);
  return message([[1, inner]]);
}

function operation(op: Json): Buffer {
  const responses = Object.entries((op.responses as Record<string, Json> | undefined) ?? {}).map(
    ([code, r]) => [1, message([[1, code], [2, message([[1, message([[1, str(r.description)], [2, r.schema ? message([[1, schema(r.schema as Json)]]) : undefined]])]])]])] as const,
  );
  return message([
    [5, str(op.operationId)],
    ...strings(6, op.produces),
    ...strings(7, op.consumes),
    ...((op.parameters as Json[] | undefined) ?? []).map((p) => [8, parameter(p)] as const),
    [9, message(responses)],
    ...vendorExtensions(13, op),
  ]);
}

const PATH_ITEM_FIELDS: Readonly<Record<string, number>> = { get: 2, put: 3, post: 4, delete: 5, patch: 8 };

/** Encodes the Swagger 2.0 document `doc` (as openApiV2 builds it) as an openapi.v2.Document. */
export function encodeOpenApiV2(doc: Json): Buffer {
  const info = doc.info as Json;
  const paths = Object.entries(doc.paths as Record<string, Json>).map(([path, item]) => {
    const ops = Object.entries(item).map(([method, op]) => [PATH_ITEM_FIELDS[method]!, operation(op as Json)] as const);
    return [2, message([[1, path], [2, message(ops)]])] as const;
  });
  const definitions = Object.entries(doc.definitions as Record<string, Json>).map(([name, s]) => [1, message([[1, name], [2, schema(s)]])] as const);
  return message([
    [1, str(doc.swagger)],
    [2, message([[1, str(info.title)], [2, str(info.version)]])],
    [8, message(paths)],
    [9, message(definitions)],
  ]);
}
