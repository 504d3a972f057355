// The value transformers of encryption at rest, in upstream's on-disk formats: `k8s:enc:<provider>:v1:<key name>:` then
// aescbc IV(16)‖CBC/PKCS#7, aesgcm nonce(12)‖ciphertext‖tag with the storage key as additional data, secretbox
// nonce(24)‖tag‖ciphertext (XSalsa20-Poly1305). identity writes the plain bytes and refuses encrypted ones.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { isUtf8 } from "node:buffer";
import { secretbox } from "@noble/ciphers/salsa.js";
import { PlatformError } from "../../errors.js";

/**
 * Marks an encrypted value. Kept as upstream's under every group suffix: it names a data format, not an API group, so
 * a store written under one suffix (or by upstream, over etcd) stays readable under another.
 */
export const ENCRYPTED_PREFIX = "k8s:enc:";

export type ProviderType = "identity" | "aescbc" | "aesgcm" | "secretbox" | "kms";

/** One provider's key (or the identity provider): how it writes, and how it reads a value carrying its prefix. */
export interface Transformer {
  /** `k8s:enc:aesgcm:v1:key1:`; empty for identity, which matches every value. */
  readonly prefix: Buffer;
  /** `aesgcm/key1` (or `identity`), for logs and metrics; never the secret. */
  readonly name: string;
  seal(plain: Uint8Array, storageKey: string): Buffer;
  /**
   * The plain bytes of `body` (the value after the prefix); throws (or rejects) when they do not authenticate. A
   * promise only when a remote key service must answer first (KMS, a data key not yet cached).
   */
  open(body: Uint8Array, storageKey: string): Buffer | Promise<Buffer>;
  /** Whether a value this transformer read should still be written again (KMS: sealed under an older key ID). */
  stale?(body: Uint8Array): boolean;
  /** Changes whenever `stale` may judge a stored value differently than before (KMS: the plugin's key ID changed). */
  generation?(): number;
}

export const identity: LocalTransformer = {
  prefix: Buffer.alloc(0),
  name: "identity",
  seal: (plain) => Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength),
  open(body) {
    // An encrypted value read through identity alone means a missing provider: never hand ciphertext upward as data.
    if (Buffer.from(body.buffer, body.byteOffset, body.byteLength).subarray(0, ENCRYPTED_PREFIX.length).toString("latin1") === ENCRYPTED_PREFIX) {
      throw new Error("identity transformer tried to read encrypted data");
    }
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  },
};

/** The key lengths each provider accepts, in bytes (upstream's). */
export type KeyedProviderType = Exclude<ProviderType, "identity" | "kms">;

export const KEY_LENGTHS: Readonly<Record<KeyedProviderType, readonly number[]>> = {
  aescbc: [32],
  aesgcm: [16, 24, 32],
  secretbox: [32],
};

/** A transformer with the key at hand: it reads without waiting. */
export interface LocalTransformer extends Transformer {
  open(body: Uint8Array, storageKey: string): Buffer;
}

/** A transformer for one named key; the length was checked when the configuration was read. */
export function keyTransformer(type: KeyedProviderType, keyName: string, secret: Buffer): LocalTransformer {
  const prefix = Buffer.from(`${ENCRYPTED_PREFIX}${type}:v1:${keyName}:`, "latin1");
  const name = `${type}/${keyName}`;
  switch (type) {
    case "aescbc":
      return { prefix, name, seal: (plain) => cbcSeal(secret, plain), open: (body) => cbcOpen(secret, body) };
    case "aesgcm":
      return { prefix, name, seal: (plain, key) => gcmSeal(secret, plain, key), open: (body, key) => gcmOpen(secret, body, key) };
    case "secretbox":
      return { prefix, name, seal: (plain) => boxSeal(secret, plain), open: (body) => boxOpen(secret, body) };
  }
}

function cbcSeal(key: Buffer, plain: Uint8Array): Buffer {
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-cbc", key, iv);
  return Buffer.concat([iv, cipher.update(plain), cipher.final()]);
}

function cbcOpen(key: Buffer, body: Uint8Array): Buffer {
  if (body.length < 32 || body.length % 16 !== 0) throw new Error("the data is not a whole number of AES blocks after the IV");
  const decipher = createDecipheriv("aes-256-cbc", key, body.subarray(0, 16));
  const plain = Buffer.concat([decipher.update(body.subarray(16)), decipher.final()]);
  // CBC carries no integrity check: a wrong key fails the padding check only about 255 times in 256, and would
  // otherwise hand out garbage. Stored values are UTF-8 text (JSON); random bytes almost never are.
  if (!isUtf8(plain)) throw new Error("the decrypted value is not text (a different key under the same name?)");
  return plain;
}

const gcmAlgorithm = (key: Buffer) => `aes-${key.length * 8}-gcm` as "aes-256-gcm";

export function gcmSeal(key: Buffer, plain: Uint8Array, storageKey: string): Buffer {
  // Random 96-bit nonces, as upstream's aesgcm provider: rotate the key well before 2^32 writes (upstream: 200,000).
  const nonce = randomBytes(12);
  const cipher = createCipheriv(gcmAlgorithm(key), key, nonce);
  cipher.setAAD(Buffer.from(storageKey, "latin1"));
  return Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

export function gcmOpen(key: Buffer, body: Uint8Array, storageKey: string): Buffer {
  if (body.length < 12 + 16) throw new Error("the data is shorter than a nonce and a tag");
  const decipher = createDecipheriv(gcmAlgorithm(key), key, body.subarray(0, 12));
  decipher.setAAD(Buffer.from(storageKey, "latin1"));
  decipher.setAuthTag(body.subarray(body.length - 16));
  return Buffer.concat([decipher.update(body.subarray(12, body.length - 16)), decipher.final()]);
}

function boxSeal(key: Buffer, plain: Uint8Array): Buffer {
  const nonce = randomBytes(24);
  return Buffer.concat([nonce, secretbox(key, nonce).seal(plain)]);
}

function boxOpen(key: Buffer, body: Uint8Array): Buffer {
  if (body.length < 24 + 16) throw new Error("the data is shorter than a nonce and a tag");
  const plain = secretbox(key, body.subarray(0, 24)).open(body.subarray(24));
  return Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength);
}

/** A value no provider could read: named by key and by what each matching provider said, never by its contents. */
export function undecryptable(storageKey: string, reasons: readonly string[]): PlatformError {
  const why = reasons.length > 0 ? reasons.join("; ") : "no configured provider matches its prefix (is a provider or key missing from the encryption configuration?)";
  return new PlatformError("STORAGE_UNAVAILABLE", `cannot decrypt the stored value of ${storageKey}: ${why}`, { retryable: false, details: { key: storageKey } });
}
