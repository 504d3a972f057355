// KMS v2 on the wire: upstream's `v2.KeyManagementService` (k8s.io/kms/apis/v2/api.proto) as a descriptor for the
// gRPC client and the test plugin, and the stored `EncryptedObject` (…/envelope/kmsv2/v2/api.proto) encoded by hand:
// five fields do not justify a protobuf runtime in the storage path, and a stored value must decode exactly as upstream's.

/** protobufjs JSON form of upstream's api.proto (package v2), read by @grpc/proto-loader's fromJSON. */
export const KMS_V2_DESCRIPTOR = {
  nested: {
    v2: {
      nested: {
        KeyManagementService: {
          methods: {
            Status: { requestType: "StatusRequest", responseType: "StatusResponse" },
            Decrypt: { requestType: "DecryptRequest", responseType: "DecryptResponse" },
            Encrypt: { requestType: "EncryptRequest", responseType: "EncryptResponse" },
          },
        },
        StatusRequest: { fields: {} },
        StatusResponse: { fields: { version: { type: "string", id: 1 }, healthz: { type: "string", id: 2 }, key_id: { type: "string", id: 3 } } },
        DecryptRequest: {
          fields: { ciphertext: { type: "bytes", id: 1 }, uid: { type: "string", id: 2 }, key_id: { type: "string", id: 3 }, annotations: { keyType: "string", type: "bytes", id: 4 } },
        },
        DecryptResponse: { fields: { plaintext: { type: "bytes", id: 1 } } },
        EncryptRequest: { fields: { plaintext: { type: "bytes", id: 1 }, uid: { type: "string", id: 2 } } },
        EncryptResponse: { fields: { ciphertext: { type: "bytes", id: 1 }, key_id: { type: "string", id: 2 }, annotations: { keyType: "string", type: "bytes", id: 3 } } },
      },
    },
  },
} as const;

export const KMS_V2_SERVICE = "v2.KeyManagementService";

export interface StatusResponse {
  readonly version: string;
  readonly healthz: string;
  readonly key_id: string;
}
export interface EncryptResponse {
  readonly ciphertext: Buffer;
  readonly key_id: string;
  readonly annotations: Readonly<Record<string, Buffer>>;
}

/** `EncryptedDEKSourceType`: a plain AES-GCM data key, or a seed from which each write derives its own key. */
export const AES_GCM_KEY = 0;
export const HKDF_SHA256_XNONCE_AES_GCM_SEED = 1;

export interface EncryptedObject {
  readonly encryptedData: Buffer;
  readonly keyID: string;
  readonly encryptedDEKSource: Buffer;
  readonly annotations: Readonly<Record<string, Buffer>>;
  readonly encryptedDEKSourceType: number;
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

const lengthDelimited = (field: number, bytes: Uint8Array): Buffer[] => [varint((field << 3) | 2), varint(bytes.length), Buffer.from(bytes)];

/** Every field but `encryptedData`, in field order after it: the per-DEK part written with each value. */
export function encodeObjectTail(o: Omit<EncryptedObject, "encryptedData">): Buffer {
  const parts: Buffer[] = [...lengthDelimited(2, Buffer.from(o.keyID, "utf8")), ...lengthDelimited(3, o.encryptedDEKSource)];
  // Map entries in key order, as Go's deterministic marshalling writes them.
  for (const key of Object.keys(o.annotations).sort()) {
    const entry = Buffer.concat([...lengthDelimited(1, Buffer.from(key, "utf8")), ...lengthDelimited(2, o.annotations[key]!)]);
    parts.push(...lengthDelimited(4, entry));
  }
  if (o.encryptedDEKSourceType !== 0) parts.push(varint(5 << 3), varint(o.encryptedDEKSourceType));
  return Buffer.concat(parts);
}

/** `encryptedData` (field 1) followed by a tail from encodeObjectTail. */
export function encodeWithTail(encryptedData: Uint8Array, tail: Buffer): Buffer {
  return Buffer.concat([...lengthDelimited(1, encryptedData), tail]);
}

export function encodeObject(o: EncryptedObject): Buffer {
  return encodeWithTail(o.encryptedData, encodeObjectTail(o));
}

class Reader {
  at = 0;
  constructor(private readonly buf: Buffer) {}
  done(): boolean {
    return this.at >= this.buf.length;
  }
  varint(): number {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      if (this.at >= this.buf.length || shift > 49) throw new Error("truncated or oversized varint");
      const b = this.buf[this.at++]!;
      n += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return n;
    }
  }
  bytes(): Buffer {
    const len = this.varint();
    if (this.at + len > this.buf.length) throw new Error("a field runs past the end of the value");
    const out = this.buf.subarray(this.at, this.at + len);
    this.at += len;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 2) this.bytes();
    else if (wire === 1 || wire === 5) this.at += wire === 1 ? 8 : 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

function decodeEntry(buf: Buffer): [string, Buffer] {
  const r = new Reader(buf);
  let key = "";
  let value: Buffer = Buffer.alloc(0);
  while (!r.done()) {
    const tag = r.varint();
    if (tag === 0x0a) key = r.bytes().toString("utf8");
    else if (tag === 0x12) value = r.bytes();
    else r.skip(tag & 7);
  }
  return [key, value];
}

/** Decodes a stored value's body; the buffers returned are views into `body`. */
export function decodeObject(body: Uint8Array): EncryptedObject {
  const r = new Reader(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  let encryptedData: Buffer = Buffer.alloc(0);
  let keyID = "";
  let encryptedDEKSource: Buffer = Buffer.alloc(0);
  const annotations: Record<string, Buffer> = Object.create(null);
  let encryptedDEKSourceType = 0;
  while (!r.done()) {
    const tag = r.varint();
    switch (tag) {
      case 0x0a:
        encryptedData = r.bytes();
        break;
      case 0x12:
        keyID = r.bytes().toString("utf8");
        break;
      case 0x1a:
        encryptedDEKSource = r.bytes();
        break;
      case 0x22: {
        const [k, v] = decodeEntry(r.bytes());
        annotations[k] = v;
        break;
      }
      case 0x28:
        encryptedDEKSourceType = r.varint();
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return { encryptedData, keyID, encryptedDEKSource, annotations, encryptedDEKSourceType };
}
