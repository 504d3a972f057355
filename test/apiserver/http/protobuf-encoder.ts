// A minimal protobuf writer for tests: builds the `k8s\0` envelopes kubectl's typed clients send, field by field.

export type Part = Buffer;

function varint(value: number | bigint): Buffer {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return Buffer.from(out);
}

const tag = (num: number, wire: number) => varint((BigInt(num) << 3n) | BigInt(wire));

/** A length-delimited field: a string, bytes, or an embedded message made of parts. */
export function bytes(num: number, value: string | Buffer | readonly Part[]): Part {
  const data = typeof value === "string" ? Buffer.from(value, "utf8") : Buffer.isBuffer(value) ? value : Buffer.concat([...value]);
  return Buffer.concat([tag(num, 2), varint(data.length), data]);
}

export const message = (num: number, ...parts: Part[]): Part => bytes(num, parts);

export function int(num: number, value: number | bigint | boolean): Part {
  return Buffer.concat([tag(num, 0), varint(typeof value === "boolean" ? Number(value) : value)]);
}

/** A map entry (key = 1, value = 2). */
export const entry = (num: number, key: string, value: Part): Part => message(num, bytes(1, key), value);

/** Raw bytes as written, for malformed input. */
export const raw = (...values: number[]): Part => Buffer.from(values);

/** ObjectMeta as kubectl writes it: every string field present, empty ones included. */
export function objectMeta(name: string, extra: Part[] = []): Part {
  return message(1, bytes(1, name), bytes(2, ""), bytes(3, ""), bytes(4, ""), bytes(5, ""), bytes(6, ""), int(7, 0), message(8), ...extra);
}

/** `k8s\0` + runtime.Unknown{typeMeta, raw, contentEncoding, contentType}. */
export function envelope(apiVersion: string, kind: string, ...body: Part[]): Buffer {
  const unknown = Buffer.concat([message(1, bytes(1, apiVersion), bytes(2, kind)), bytes(2, Buffer.concat(body)), bytes(3, ""), bytes(4, "")]);
  return Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), unknown]);
}
