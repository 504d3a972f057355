// Decodes the protobuf request bodies kubectl's typed clients send for built-in kinds (`kubectl create token|sa|ns|
// secret|clusterrole...`, `kubectl auth whoami`, `kubectl certificate approve|deny`) into the JSON object.
// Hand-written and table-driven: the wire format is small, no kept library ships these message descriptors, and only
// the kinds in protobuf-messages.ts are understood; everything else is a 415.
import { PlatformError } from "../../errors.js";
import { MESSAGES, TIME, UNKNOWN, type Desc, type Field, type Kind, type Scalar } from "./protobuf-messages.js";

/** The envelope prefix of upstream's protobuf serializer. */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const MAX_DEPTH = 16;
const EXTRA_VALUE: Desc = { 1: { name: "items", kind: "string", repeated: true } };

const bad = (why: string) => new PlatformError("BAD_REQUEST", `the protobuf request body is malformed: ${why}`);

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.pos >= this.buf.length) throw bad("truncated varint");
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
    }
    throw bad("varint too long");
  }

  bytes(): Buffer {
    const len = this.varint();
    if (len > BigInt(this.buf.length - this.pos)) throw bad("length past the end");
    const out = this.buf.subarray(this.pos, this.pos + Number(len));
    this.pos += Number(len);
    return out;
  }

  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 2) this.bytes();
    else if (wireType === 1 || wireType === 5) this.pos += wireType === 1 ? 8 : 4;
    else throw bad(`unsupported wire type ${wireType}`);
    if (this.pos > this.buf.length) throw bad("truncated field");
  }
}

/** Go's zero Time travels as an empty message; in JSON it is absent. */
function timeText(t: Record<string, unknown>): string | undefined {
  if (!t.seconds && !t.nanos) return undefined;
  const ms = Number(t.seconds ?? 0) * 1000;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) throw bad("a timestamp is out of range");
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Upstream's JSON leaves out empty strings and zero numbers (`omitempty`) while its protobuf carries them, so they
 * are dropped here: a decoded body then reads exactly like the JSON a client would have sent.
 */
const isZero = (v: unknown) => v === "" || v === 0 || v === undefined;

function decodeMessage(buf: Buffer, desc: Desc, depth: number): Record<string, unknown> {
  if (depth > MAX_DEPTH) throw bad("nested too deeply");
  const r = new Reader(buf);
  const out: Record<string, unknown> = {};
  while (!r.done) {
    const tag = r.varint();
    const num = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    const field = Object.hasOwn(desc, num) ? desc[num] : undefined;
    if (!field) {
      r.skip(wire);
      continue;
    }
    const value = decodeValue(r, wire, field, depth);
    if (field.repeated) ((out[field.name] ??= []) as unknown[]).push(value ?? "");
    else if (typeof field.kind === "object" && "map" in field.kind) {
      const [k, v] = value as [string, unknown];
      // Same rule as the JSON decoder: a key that would reach the prototype is refused, not dropped.
      if (k === "__proto__") throw new PlatformError("BAD_REQUEST", `the key "__proto__" of ${field.name} is not accepted (it names an object's prototype); rename it`);
      ((out[field.name] ??= {}) as Record<string, unknown>)[k] = v;
    } else if (isZero(value)) delete out[field.name];
    else out[field.name] = value;
  }
  return out;
}

function decodeScalar(r: Reader, wire: number, kind: Scalar, name: string, depth: number): unknown {
  if (wire !== (kind === "int" || kind === "bool" ? 0 : 2)) throw bad(`field ${name} has wire type ${wire}`);
  if (kind === "int" || kind === "bool") {
    const v = BigInt.asIntN(64, r.varint());
    return kind === "bool" ? v !== 0n : Number(v);
  }
  const bytes = r.bytes();
  switch (kind) {
    case "string":
      return bytes.toString("utf8");
    case "bytes":
      return bytes.toString("base64");
    case "time":
      return timeText(decodeMessage(bytes, TIME, depth + 1));
    case "stringList":
      return decodeMessage(bytes, EXTRA_VALUE, depth + 1).items ?? [];
  }
}

function decodeValue(r: Reader, wire: number, field: Field, depth: number): unknown {
  const kind: Kind = field.kind;
  if (typeof kind === "string") return decodeScalar(r, wire, kind, field.name, depth);
  if (wire !== 2) throw bad(`field ${field.name} has wire type ${wire}`);
  const bytes = r.bytes();
  if ("message" in kind) return decodeMessage(bytes, kind.message, depth + 1);
  const entry = new Reader(bytes);
  let key = "";
  let value: unknown;
  if (depth + 1 > MAX_DEPTH) throw bad("nested too deeply");
  while (!entry.done) {
    const tag = entry.varint();
    const [num, w] = [Number(tag >> 3n), Number(tag & 7n)];
    if (num === 1) key = String(decodeScalar(entry, w, "string", `${field.name} key`, depth + 1));
    else if (num === 2) value = decodeScalar(entry, w, kind.map, `${field.name} value`, depth + 1);
    else entry.skip(w);
  }
  return [key, value ?? (kind.map === "stringList" ? [] : "")];
}

/** `managedFields[].fieldsV1` travels as raw JSON bytes. */
function parseFieldsV1(metadata: Record<string, unknown>): void {
  for (const e of (metadata.managedFields as Record<string, unknown>[] | undefined) ?? []) {
    const fv = e.fieldsV1 as { Raw?: string } | undefined;
    if (!fv) continue;
    try {
      e.fieldsV1 = fv.Raw ? JSON.parse(Buffer.from(fv.Raw, "base64").toString("utf8")) : {};
    } catch {
      throw bad("managedFields.fieldsV1 is not JSON");
    }
  }
}

/** The kinds protobuf bodies are accepted for. */
export const PROTOBUF_KINDS: readonly string[] = Object.keys(MESSAGES);

/** The JSON form of a protobuf-encoded object body (`k8s\0` + runtime.Unknown), for the kinds in PROTOBUF_KINDS. */
export function decodeProtobufObject(body: Buffer): Record<string, unknown> {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) throw bad("missing the k8s envelope prefix");
  const envelope = decodeMessage(body.subarray(MAGIC.length), UNKNOWN, 0);
  const typeMeta = (envelope.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const kind = typeMeta.kind;
  const desc = kind !== undefined && Object.hasOwn(MESSAGES, kind) ? MESSAGES[kind] : undefined;
  if (!desc) {
    throw new PlatformError("UNSUPPORTED_MEDIA_TYPE", `protobuf bodies are accepted only for ${PROTOBUF_KINDS.join(", ")}; send ${kind ?? "this object"} as application/json`);
  }
  const obj = decodeMessage(Buffer.from(String(envelope.raw ?? ""), "base64"), desc, 0);
  parseFieldsV1((obj.metadata ?? {}) as Record<string, unknown>);
  return { apiVersion: typeMeta.apiVersion, kind, ...obj };
}
