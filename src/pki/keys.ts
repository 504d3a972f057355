// Private keys: load from PEM (PKCS#1, PKCS#8, SEC1) into node KeyObjects, generate, match, write with mode 0600.
import { Buffer } from "node:buffer";
import {
  createHash,
  hash,
  createPrivateKey,
  generateKeyPair as generateKeyPairCallback,
  X509Certificate,
  type KeyObject,
} from "node:crypto";
import { open } from "node:fs/promises";
import { promisify } from "node:util";
import { PlatformError } from "../errors.js";
import { RSA_MAX_BITS, RSA_MIN_BITS } from "./csr-public-key.js";
import { DerReader, Tag } from "./der.js";
import { decodePem, describeBlock } from "./pem.js";
import { generateNativeRsaKeyPair } from "./rsa-keygen.js";
import type { KeyAlgorithm, NamedCurve } from "./types.js";

export type KeyType = "p256" | "p384" | "p521" | "rsa2048" | "rsa3072" | "rsa4096" | "ed25519";
export const KEY_TYPES: readonly KeyType[] = ["p256", "p384", "p521", "rsa2048", "rsa3072", "rsa4096", "ed25519"];

export interface KeyDescription {
  readonly algorithm: KeyAlgorithm;
  /** RSA modulus bits; curve size for ECDSA; 256 for Ed25519. */
  readonly bits: number;
  readonly curve?: NamedCurve;
}

export interface GeneratedKeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** PKCS#8 PEM of the private key. */
  readonly privateKeyPem: string;
}

const DER_TYPES = { "PRIVATE KEY": "pkcs8", "RSA PRIVATE KEY": "pkcs1", "EC PRIVATE KEY": "sec1" } as const;
const ENCRYPTED_LABEL = "ENCRYPTED PRIVATE KEY";
// `openssl ecparam -genkey` writes the curve parameters in a block before the key.
const IGNORED_LABELS = new Set(["EC PARAMETERS"]);
const ENCRYPTED_MESSAGE = "encrypted private keys are not supported; decrypt with openssl pkey";

const CURVE_NAMES: Readonly<Record<string, NamedCurve>> = { prime256v1: "P-256", secp384r1: "P-384", secp521r1: "P-521" };
const CURVE_BITS: Readonly<Record<NamedCurve, number>> = { "P-256": 256, "P-384": 384, "P-521": 521 };

/** Loads the one private key of a PEM text: RSA (2048–8192 bits), ECDSA P-256/P-384/P-521 or Ed25519. */
export function loadPrivateKey(pem: string | Uint8Array): KeyObject {
  const text = typeof pem === "string" ? pem : Buffer.from(pem.buffer, pem.byteOffset, pem.byteLength).toString("latin1");
  const blocks = decodePem(text).filter((b) => !IGNORED_LABELS.has(b.label));
  const [block, extra] = blocks;
  if (block === undefined) throw new PlatformError("PEM_LABEL", "expected a private key block, found only EC PARAMETERS");
  if (extra !== undefined) {
    throw new PlatformError("PEM_INVALID", `${describeBlock(extra.index, extra.label)}: expected exactly one private key block`);
  }
  const where = describeBlock(block.index, block.label);
  // Legacy OpenSSL encryption shows as RFC 1421 headers (Proc-Type: 4,ENCRYPTED) on a PKCS#1/SEC1 block.
  if (block.label === ENCRYPTED_LABEL || block.hasHeaders) throw new PlatformError("KEY_INVALID", `${where}: ${ENCRYPTED_MESSAGE}`);
  const type = DER_TYPES[block.label as keyof typeof DER_TYPES];
  if (type === undefined) {
    throw new PlatformError("PEM_LABEL", `${where}: expected label "PRIVATE KEY", "RSA PRIVATE KEY" or "EC PRIVATE KEY"`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: Buffer.from(block.der), format: "der", type });
  } catch (err) {
    throw new PlatformError("KEY_INVALID", `${where}: private key cannot be parsed: ${(err as Error).message}`, { cause: err });
  }
  describeKey(key);
  return key;
}

/** Algorithm, size and curve of a key; refuses key types the CA does not sign with. */
export function describeKey(key: KeyObject): KeyDescription {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case "rsa": {
      const bits = details.modulusLength ?? 0;
      if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) {
        throw new PlatformError("KEY_TOO_WEAK", `RSA key of ${bits} bits is outside ${RSA_MIN_BITS}–${RSA_MAX_BITS} bits`);
      }
      return { algorithm: "rsa", bits };
    }
    case "ec": {
      const curve = CURVE_NAMES[details.namedCurve ?? ""];
      if (curve === undefined) {
        throw new PlatformError("KEY_UNSUPPORTED", `EC curve ${details.namedCurve ?? "(unnamed)"} is not supported; use P-256, P-384 or P-521`);
      }
      return { algorithm: "ecdsa", bits: CURVE_BITS[curve], curve };
    }
    case "ed25519":
      return { algorithm: "ed25519", bits: 256 };
    default:
      throw new PlatformError(
        "KEY_UNSUPPORTED",
        `key type ${key.asymmetricKeyType ?? "unknown"} is not supported; use RSA, ECDSA P-256/P-384/P-521 or Ed25519`,
      );
  }
}

const generate = promisify(generateKeyPairCallback);

/** Generates a key pair off the main thread (RSA generation takes up to seconds). */
export async function generateKeyPair(type: KeyType): Promise<GeneratedKeyPair> {
  let pair: { publicKey: KeyObject; privateKey: KeyObject };
  switch (type) {
    case "p256":
    case "p384":
    case "p521":
      pair = await generate("ec", { namedCurve: `P-${type.slice(1)}` });
      break;
    case "rsa2048":
    case "rsa3072":
    case "rsa4096": {
      // The native generator (rsa-keygen.ts) takes ~1/6 of the CPU OpenSSL 3's does; node:crypto without it.
      const bits = Number(type.slice(3));
      pair = (await generateNativeRsaKeyPair(bits)) ?? (await generate("rsa", { modulusLength: bits, publicExponent: 0x10001 }));
      break;
    }
    case "ed25519":
      pair = await generate("ed25519", {});
      break;
    default:
      throw new PlatformError("INVALID_ARGUMENT", `unknown key type ${JSON.stringify(type)}; use one of ${KEY_TYPES.join(", ")}`);
  }
  return { ...pair, privateKeyPem: exportPrivateKeyPem(pair.privateKey) };
}

/** PKCS#8 PEM of a private key. */
export function exportPrivateKeyPem(key: KeyObject): string {
  return key.export({ type: "pkcs8", format: "pem" }).toString();
}

/** Whether `privateKey` is the key of the certificate (PEM text, DER bytes or a parsed X509Certificate). */
export function privateKeyMatchesCertificate(privateKey: KeyObject, certificate: string | Uint8Array | X509Certificate): boolean {
  let cert: X509Certificate;
  try {
    cert = certificate instanceof X509Certificate ? certificate : new X509Certificate(toBuffer(certificate));
  } catch (err) {
    throw new PlatformError("CERT_INVALID", `certificate cannot be parsed: ${(err as Error).message}`, { cause: err });
  }
  return cert.checkPrivateKey(privateKey);
}

function toBuffer(input: string | Uint8Array): Buffer {
  return typeof input === "string" ? Buffer.from(input) : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
}

/** The subjectPublicKey bits of a DER SubjectPublicKeyInfo. */
export function subjectPublicKeyBits(spki: Uint8Array): Uint8Array {
  const info = new DerReader(spki).sequence("subjectPublicKeyInfo");
  info.next(Tag.SEQUENCE, "subjectPublicKeyInfo algorithm");
  return info.bitString("subjectPublicKey").bytes;
}

/** RFC 5280 §4.2.1.2 method (1) key identifier: SHA-1 of the subjectPublicKey bits (an identifier, not a security use). */
export function subjectKeyIdentifier(spki: Uint8Array): Uint8Array {
  const bits = subjectPublicKeyBits(spki);
  // crypto.hash (Node ≥ 20.12) is the one-shot form: no Hash object per certificate.
  return typeof hash === "function" ? hash("sha1", bits, "buffer") : new Uint8Array(createHash("sha1").update(bits).digest());
}

/**
 * Writes a private key readable by its owner only: the file is created 0600, and an existing file gets
 * mode 0600 before the new key is written into it.
 */
export async function writePrivateKeyFile(path: string, pem: string): Promise<void> {
  try {
    const handle = await open(path, "w", 0o600);
    try {
      await handle.chmod(0o600);
      await handle.writeFile(pem);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot write private key file ${path}: ${(err as Error).message}`, { cause: err });
  }
}
