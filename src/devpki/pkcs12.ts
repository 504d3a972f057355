// Writes a PKCS#12 file (RFC 7292) in-process: the key as a PBES2/AES-256 shrouded bag, the certificates plain, an HMAC-SHA-256 MAC.
import { createHash, createHmac, createPrivateKey, randomBytes } from "node:crypto";
import { DER_NULL, explicit, integer, objectIdentifier, octetString, sequence, setOf, tlv } from "../pki/der-writer.js";
import { OID } from "../pki/oids.js";

const P12 = {
  data: "1.2.840.113549.1.7.1",
  pkcs8ShroudedKeyBag: "1.2.840.113549.1.12.10.1.2",
  certBag: "1.2.840.113549.1.12.10.1.3",
  x509Certificate: "1.2.840.113549.1.9.22.1",
  friendlyName: "1.2.840.113549.1.9.20",
  localKeyId: "1.2.840.113549.1.9.21",
} as const;

/** mkcert's password, which Java's keytool and most importers expect from a development bundle. */
export const DEFAULT_PKCS12_PASSWORD = "changeit";
// OpenSSL 3's default count for both the MAC and PBKDF2.
const ITERATIONS = 2048;
const BMP_STRING = 0x1e;

function bmp(text: string, nullTerminated = false): Buffer {
  const out = Buffer.alloc((text.length + (nullTerminated ? 1 : 0)) * 2);
  for (let i = 0; i < text.length; i++) out.writeUInt16BE(text.charCodeAt(i), i * 2);
  return out;
}

/** RFC 7292 Appendix B.2 key derivation with SHA-256 (u = 32, v = 64): `id` 3 makes the MAC key. */
export function pkcs12Kdf(password: string, salt: Uint8Array, id: number, iterations: number, length: number): Buffer {
  const u = 32;
  const v = 64;
  const fill = (src: Uint8Array) => {
    if (src.length === 0) return Buffer.alloc(0);
    const out = Buffer.alloc(v * Math.ceil(src.length / v));
    for (let i = 0; i < out.length; i++) out[i] = src[i % src.length]!;
    return out;
  };
  const D = Buffer.alloc(v, id);
  const I = Buffer.concat([fill(salt), fill(bmp(password, true))]);
  const out: Buffer[] = [];
  for (let produced = 0; produced < length; produced += u) {
    let A = createHash("sha256").update(D).update(I).digest();
    for (let r = 1; r < iterations; r++) A = createHash("sha256").update(A).digest();
    out.push(A);
    const B = fill(A);
    // Each v-byte block of I becomes (block + B + 1) mod 2^(8v).
    for (let j = 0; j < I.length; j += v) {
      let carry = 1;
      for (let k = v - 1; k >= 0; k--) {
        const sum = I[j + k]! + B[k]! + carry;
        I[j + k] = sum & 0xff;
        carry = sum >> 8;
      }
    }
  }
  return Buffer.concat(out).subarray(0, length);
}

const attribute = (oid: string, value: Uint8Array) => sequence(objectIdentifier(oid), setOf(value));
const bag = (oid: string, value: Uint8Array, attributes: readonly Uint8Array[]) =>
  sequence(objectIdentifier(oid), explicit(0, value), ...(attributes.length > 0 ? [setOf(...attributes)] : []));
const dataContent = (der: Uint8Array) => sequence(objectIdentifier(P12.data), explicit(0, octetString(der)));

export interface Pkcs12Input {
  /** PKCS#8 (or PKCS#1/SEC1) PEM of the private key. */
  readonly keyPem: string;
  /** DER certificates, the key's first, then the chain. */
  readonly certificates: readonly Uint8Array[];
  /** Shown by importers (friendlyName of the key and its certificate). */
  readonly friendlyName: string;
  readonly password?: string;
}

/** DER of a PFX holding the key and certificates, readable by `openssl pkcs12`, Java's keytool and browsers. */
export function buildPkcs12(input: Pkcs12Input): Uint8Array {
  const password = input.password ?? DEFAULT_PKCS12_PASSWORD;
  const [leaf, ...chain] = input.certificates;
  if (leaf === undefined) throw new RangeError("a PKCS#12 file needs the key's certificate");
  const keyId = createHash("sha1").update(leaf).digest();
  const mine = [attribute(P12.friendlyName, tlv(BMP_STRING, bmp(input.friendlyName))), attribute(P12.localKeyId, octetString(keyId))];
  const certBag = (der: Uint8Array, attrs: readonly Uint8Array[]) =>
    bag(P12.certBag, sequence(objectIdentifier(P12.x509Certificate), explicit(0, octetString(der))), attrs);
  const certs = sequence(certBag(leaf, mine), ...chain.map((der) => certBag(der, [])));
  // node writes EncryptedPrivateKeyInfo with PBES2: PBKDF2 (HMAC-SHA-256) and AES-256-CBC.
  const shrouded = createPrivateKey(input.keyPem).export({ type: "pkcs8", format: "der", cipher: "aes-256-cbc", passphrase: password });
  const keys = sequence(bag(P12.pkcs8ShroudedKeyBag, new Uint8Array(shrouded), mine));
  const authSafe = sequence(dataContent(certs), dataContent(keys));
  const salt = randomBytes(16);
  const mac = createHmac("sha256", pkcs12Kdf(password, salt, 3, ITERATIONS, 32)).update(authSafe).digest();
  const macData = sequence(sequence(sequence(objectIdentifier(OID.sha256), DER_NULL), octetString(mac)), octetString(salt), integer(ITERATIONS));
  return sequence(integer(3), dataContent(authSafe), macData);
}
