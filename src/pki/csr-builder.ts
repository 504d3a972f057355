// Builds a signed PKCS#10 request for a key we hold, so the certificates we mint go through the same parse → sign path as any CSR.
import { isIPv4, isIPv6 } from "node:net";
import { sign, type KeyObject } from "node:crypto";
import { PlatformError } from "../errors.js";
import { describeKey } from "./keys.js";
import { bitString, explicit, implicitPrimitive, integer, objectIdentifier, sequence, setOf, utf8String } from "./der-writer.js";
import { OID } from "./oids.js";
import { extension, signatureScheme } from "./tbs-template.js";

export interface CsrContent {
  readonly commonName?: string;
  readonly organizations?: readonly string[];
  readonly organizationalUnits?: readonly string[];
  readonly dns?: readonly string[];
  readonly ip?: readonly string[];
  readonly email?: readonly string[];
  readonly uri?: readonly string[];
}

export interface CsrKeys {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

const HOST_RE = /^(\*\.)?[a-z0-9_]([-a-z0-9_]*[a-z0-9_])?(\.[a-z0-9_]([-a-z0-9_]*[a-z0-9_])?)*\.?$/i;

/** Whether `name` is a DNS name a certificate may carry (a leading `*.` wildcard allowed, at most 253 characters). */
export const isDnsName = (name: string): boolean => HOST_RE.test(name) && name.length <= 253;

// GeneralName CHOICE tags (RFC 5280 §4.2.1.6).
const GN_EMAIL = 1;
const GN_DNS = 2;
const GN_URI = 6;
const GN_IP = 7;

function rdn(oid: string, value: string): Uint8Array {
  return setOf(sequence(objectIdentifier(oid), utf8String(value)));
}

/** Name with O, then OU, then CN: most general first, as openssl and the seed's examples order them. */
export function encodeName(content: CsrContent): Uint8Array {
  return sequence(
    ...(content.organizations ?? []).map((o) => rdn(OID.organizationName, o)),
    ...(content.organizationalUnits ?? []).map((ou) => rdn(OID.organizationalUnitName, ou)),
    ...(content.commonName === undefined ? [] : [rdn(OID.commonName, content.commonName)]),
  );
}

/** The 4 or 16 address bytes of a textual IP (IPv6 may be compressed or end in dotted IPv4). */
export function ipBytes(ip: string): Uint8Array {
  if (isIPv4(ip)) return Uint8Array.from(ip.split(".").map(Number));
  if (!isIPv6(ip)) throw new PlatformError("INVALID_ARGUMENT", `${JSON.stringify(ip)} is not an IP address`);
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip)?.[1];
  const text = v4 === undefined ? ip : `${ip.slice(0, -v4.length)}0:0`;
  const [head = "", tail] = text.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  });
  if (v4 !== undefined) out.set(v4.split(".").map(Number), 12);
  return out;
}

/** The IA5String bytes of a name of `kind`; a DNS name must be one, the others printable ASCII without spaces. */
function ascii(text: string, kind: "DNS name" | "email address" | "URI"): Uint8Array {
  const ok = kind === "DNS name" ? isDnsName(text) : /^[\x21-\x7e]+$/.test(text);
  if (!ok) throw new PlatformError("INVALID_ARGUMENT", `${JSON.stringify(text)} is not a valid ${kind}`);
  return new TextEncoder().encode(text);
}

function sanExtension(content: CsrContent): Uint8Array | undefined {
  const names = [
    ...(content.dns ?? []).map((d) => implicitPrimitive(GN_DNS, ascii(d, "DNS name"))),
    ...(content.ip ?? []).map((ip) => implicitPrimitive(GN_IP, ipBytes(ip))),
    ...(content.email ?? []).map((e) => implicitPrimitive(GN_EMAIL, ascii(e, "email address"))),
    ...(content.uri ?? []).map((u) => implicitPrimitive(GN_URI, ascii(u, "URI"))),
  ];
  return names.length === 0 ? undefined : extension(OID.subjectAltName, false, sequence(...names));
}

/** DER of a CertificationRequest for `content`, signed with `keys.privateKey`. */
export function buildCsr(content: CsrContent, keys: CsrKeys): Uint8Array {
  const key = describeKey(keys.privateKey);
  const spki = new Uint8Array(keys.publicKey.export({ type: "spki", format: "der" }));
  const san = sanExtension(content);
  const attributes = san === undefined ? [] : [sequence(objectIdentifier(OID.extensionRequest), setOf(sequence(san)))];
  const info = sequence(integer(0), encodeName(content), spki, explicit(0, ...attributes));
  const scheme = signatureScheme(key.algorithm, key.curve);
  return sequence(info, scheme.algorithmDer, bitString(sign(scheme.hash, info, keys.privateKey)));
}
