// Option-function builder for hand-made PKCS#10 requests: shapes openssl and @peculiar/x509 do not emit.
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { bits, ctx, int, name, octets, oid, seq, set, utf8 } from "./der-builder.js";

const keys = generateKeyPairSync("ec", { namedCurve: "P-256" });

export interface HandCsrOptions {
  readonly version?: number;
  /** Encoded Name (default CN=hand). */
  readonly subject?: Uint8Array;
  /** Leave out the [0] attributes field altogether. */
  readonly omitAttributes?: boolean;
  /** Encoded Attribute SEQUENCEs placed in the [0] field. */
  readonly attributes?: readonly Uint8Array[];
  /** Encoded Extension SEQUENCEs, wrapped into one extensionRequest attribute. */
  readonly extensions?: readonly Uint8Array[];
  /** extensionRequest attribute OID (PKCS#9 by default; the Microsoft one for legacy requests). */
  readonly extensionRequestOid?: string;
  /** Encoded SubjectPublicKeyInfo (default: a P-256 key that signs). */
  readonly spki?: Uint8Array;
  readonly privateKey?: KeyObject;
  /** Encoded signature AlgorithmIdentifier (default ecdsa-with-SHA256). */
  readonly signatureAlgorithm?: Uint8Array;
  /** Bytes appended inside the outer SEQUENCE after the signature. */
  readonly trailer?: Uint8Array;
}

export const PKCS9_EXTENSION_REQUEST = "1.2.840.113549.1.9.14";
export const MS_EXTENSION_REQUEST = "1.3.6.1.4.1.311.2.1.14";

/** One Extension SEQUENCE. */
export function extension(id: string, value: Uint8Array, critical?: boolean): Uint8Array {
  return seq(oid(id), critical === undefined ? [] : Uint8Array.from([0x01, 0x01, critical ? 0xff : 0x00]), octets(value));
}

export function attribute(id: string, ...values: Uint8Array[]): Uint8Array {
  return seq(oid(id), set(...values));
}

/** Builds and signs a CertificationRequest from parts; returns its DER. */
export function handCsr(o: HandCsrOptions = {}): Uint8Array {
  const attrs = [...(o.attributes ?? [])];
  if (o.extensions !== undefined) attrs.push(attribute(o.extensionRequestOid ?? PKCS9_EXTENSION_REQUEST, seq(...o.extensions)));
  const spki = o.spki ?? new Uint8Array(keys.publicKey.export({ format: "der", type: "spki" }));
  const info = seq(
    int(o.version ?? 0),
    o.subject ?? name([["2.5.4.3", utf8("hand")]]),
    spki,
    o.omitAttributes ? [] : ctx(0, true, ...attrs),
  );
  const signature = new Uint8Array(sign("sha256", info, o.privateKey ?? keys.privateKey));
  return seq(info, o.signatureAlgorithm ?? seq(oid("1.2.840.10045.4.3.2")), bits(signature), o.trailer ?? []);
}
