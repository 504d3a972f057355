// Decodes the protobuf request bodies kubectl's typed clients send for built-in kinds (today: CertificateSigningRequest,
// which `kubectl certificate approve|deny` PUTs as protobuf). Hand-written: the wire format is small, and no kept
// library ships these message descriptors; only the messages listed here are understood, everything else is a 415.
import { PlatformError } from "../../errors.js";

/** The envelope prefix of upstream's protobuf serializer. */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type Kind = "string" | "bytes" | "int" | "bool" | "time" | { readonly message: Desc } | { readonly map: Desc | "string" };
interface Field {
  readonly name: string;
  readonly kind: Kind;
  readonly repeated?: boolean;
}
type Desc = Readonly<Record<number, Field>>;

const f = (name: string, kind: Kind, repeated = false): Field => ({ name, kind, repeated });

const TIME: Desc = { 1: f("seconds", "int"), 2: f("nanos", "int") };
const OWNER_REFERENCE: Desc = { 1: f("kind", "string"), 3: f("name", "string"), 4: f("uid", "string"), 5: f("apiVersion", "string"), 6: f("controller", "bool"), 7: f("blockOwnerDeletion", "bool") };
const FIELDS_V1: Desc = { 1: f("Raw", "bytes") };
const MANAGED_FIELDS: Desc = {
  1: f("manager", "string"), 2: f("operation", "string"), 3: f("apiVersion", "string"), 4: f("time", "time"),
  6: f("fieldsType", "string"), 7: f("fieldsV1", { message: FIELDS_V1 }), 8: f("subresource", "string"),
};
const OBJECT_META: Desc = {
  1: f("name", "string"), 2: f("generateName", "string"), 3: f("namespace", "string"), 4: f("selfLink", "string"),
  5: f("uid", "string"), 6: f("resourceVersion", "string"), 7: f("generation", "int"), 8: f("creationTimestamp", "time"),
  9: f("deletionTimestamp", "time"), 10: f("deletionGracePeriodSeconds", "int"), 11: f("labels", { map: "string" }),
  12: f("annotations", { map: "string" }), 13: f("ownerReferences", { message: OWNER_REFERENCE }, true),
  14: f("finalizers", "string", true), 17: f("managedFields", { message: MANAGED_FIELDS }, true),
};
const EXTRA_VALUE: Desc = { 1: f("items", "string", true) };
const CSR_SPEC: Desc = {
  1: f("request", "bytes"), 2: f("username", "string"), 3: f("uid", "string"), 4: f("groups", "string", true),
  5: f("usages", "string", true), 6: f("extra", { map: EXTRA_VALUE }), 7: f("signerName", "string"), 8: f("expirationSeconds", "int"),
};
const CSR_CONDITION: Desc = {
  1: f("type", "string"), 2: f("reason", "string"), 3: f("message", "string"), 4: f("lastUpdateTime", "time"),
  5: f("lastTransitionTime", "time"), 6: f("status", "string"),
};
const CSR_STATUS: Desc = { 1: f("conditions", { message: CSR_CONDITION }, true), 2: f("certificate", "bytes") };
const CSR: Desc = { 1: f("metadata", { message: OBJECT_META }), 2: f("spec", { message: CSR_SPEC }), 3: f("status", { message: CSR_STATUS }) };

/** Messages by kind; the group is whatever the endpoint serves (checked by the registry like any body). */
const MESSAGES: Readonly<Record<string, Desc>> = { CertificateSigningRequest: CSR };
const TYPE_META: Desc = { 1: f("apiVersion", "string"), 2: f("kind", "string") };
const UNKNOWN: Desc = { 1: f("typeMeta", { message: TYPE_META }), 2: f("raw", "bytes"), 3: f("contentEncoding", "string"), 4: f("contentType", "string") };

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
    const len = Number(this.varint());
    if (len > this.buf.length - this.pos) throw bad("length past the end");
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
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
  return new Date(Number(t.seconds ?? 0) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function decodeMessage(buf: Buffer, desc: Desc, depth = 0): Record<string, unknown> {
  if (depth > 16) throw bad("nested too deeply");
  const r = new Reader(buf);
  const out: Record<string, unknown> = {};
  while (!r.done) {
    const tag = Number(r.varint());
    const [num, wire] = [tag >>> 3, tag & 7];
    const field = desc[num];
    if (!field) {
      r.skip(wire);
      continue;
    }
    const value = decodeValue(r, wire, field, depth);
    if (value === undefined) continue;
    if (field.repeated) ((out[field.name] ??= []) as unknown[]).push(value);
    else if (typeof field.kind === "object" && "map" in field.kind) {
      const [k, v] = value as [string, unknown];
      ((out[field.name] ??= {}) as Record<string, unknown>)[k] = v;
    } else out[field.name] = value;
  }
  return out;
}

function decodeValue(r: Reader, wire: number, field: Field, depth: number): unknown {
  const kind = field.kind;
  const expect = (w: number) => {
    if (wire !== w) throw bad(`field ${field.name} has wire type ${wire}`);
  };
  if (kind === "int" || kind === "bool") {
    expect(0);
    const v = BigInt.asIntN(64, r.varint());
    return kind === "bool" ? v !== 0n : Number(v);
  }
  expect(2);
  const bytes = r.bytes();
  if (kind === "string") return bytes.toString("utf8");
  if (kind === "bytes") return bytes.toString("base64");
  if (kind === "time") return timeText(decodeMessage(bytes, TIME, depth + 1));
  if ("message" in kind) return decodeMessage(bytes, kind.message, depth + 1);
  const entry = decodeMessage(bytes, { 1: f("key", "string"), 2: f("value", kind.map === "string" ? "string" : { message: kind.map }) }, depth + 1);
  const value = kind.map === "string" ? (entry.value ?? "") : ((entry.value as Record<string, unknown> | undefined)?.items ?? []);
  return [entry.key ?? "", value];
}

/** The JSON form of a protobuf-encoded object body, for the kinds in MESSAGES. */
export function decodeProtobufObject(body: Buffer): Record<string, unknown> {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) throw bad("missing the k8s envelope prefix");
  const envelope = decodeMessage(body.subarray(MAGIC.length), UNKNOWN);
  const typeMeta = (envelope.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const desc = typeMeta.kind ? MESSAGES[typeMeta.kind] : undefined;
  if (!desc) {
    throw new PlatformError("UNSUPPORTED_MEDIA_TYPE", `protobuf bodies are accepted only for ${Object.keys(MESSAGES).join(", ")}; send ${typeMeta.kind ?? "this object"} as application/json`);
  }
  const raw = Buffer.from(String(envelope.raw ?? ""), "base64");
  const fieldsV1 = (m: Record<string, unknown>) => {
    for (const e of (m.managedFields as Record<string, unknown>[] | undefined) ?? []) {
      const fv = e.fieldsV1 as { Raw?: string } | undefined;
      if (!fv) continue;
      try {
        e.fieldsV1 = fv.Raw ? JSON.parse(Buffer.from(fv.Raw, "base64").toString("utf8")) : {};
      } catch {
        throw bad("managedFields.fieldsV1 is not JSON");
      }
    }
  };
  const obj = decodeMessage(raw, desc);
  fieldsV1((obj.metadata ?? {}) as Record<string, unknown>);
  return { apiVersion: typeMeta.apiVersion, kind: typeMeta.kind, ...obj };
}
