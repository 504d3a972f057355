// Distinguished names (RDNs, RFC 4514 text) and GeneralNames (subjectAltName) decoded from DER, IP text per RFC 5952.
import type { DistinguishedName, NameAttribute, SubjectAltNames } from "./types.js";
import { hex } from "./bytes.js";
import { DerReader } from "./der.js";
import { decodeString, derError, isStringTag, Tag, tagName, type Tlv } from "./der-values.js";
import { NAME_ATTRIBUTE_SHORT_NAMES, OID } from "./oids.js";

/**
 * Reads a Name (SEQUENCE OF RDN) at the reader's position; `der` is a view of the Name's bytes. `issued`: the name is a
 * request's subject, copied as it is into a certificate, so values OpenSSL cannot read back in a certificate are
 * refused (a VisibleString; a BMPString with surrogate pairs, which OpenSSL reads as UCS-2): the certificate would be
 * unreadable to OpenSSL and node alike.
 */
export function readName(reader: DerReader, what = "name", issued = false): DistinguishedName {
  const tlv = reader.next(Tag.SEQUENCE, what);
  const seq = reader.child(tlv);
  const rdns: NameAttribute[][] = [];
  let commonName: string | undefined;
  const organizations: string[] = [];
  const organizationalUnits: string[] = [];
  const texts: string[] = [];
  while (seq.hasMore()) {
    const setStart = seq.offset;
    const set = seq.set(`${what} RDN`);
    if (!set.hasMore()) throw derError(`${what}: empty relative distinguished name`, setStart);
    const rdn: NameAttribute[] = [];
    let rdnText = "";
    while (set.hasMore()) {
      const atv = set.sequence(`${what} attribute`);
      const oid = atv.oid(`${what} attribute type`);
      const valueTlv = atv.next(undefined, `${what} attribute value`);
      atv.finish(`${what} attribute`);
      const shortName = NAME_ATTRIBUTE_SHORT_NAMES[oid];
      if (issued) checkIssuable(atv.buf, valueTlv, `${what} attribute ${oid}`);
      const isText = isStringTag(valueTlv.tag);
      const value = isText ? decodeString(atv.buf, valueTlv, `${what} attribute ${oid}`) : `#${hex(atv.bytes(valueTlv))}`;
      rdn.push(shortName === undefined ? { oid, value } : { oid, shortName, value });
      // RFC 4514 §2.4: types without a short name, and values that are not strings, are written as '#' + hex DER.
      const valueText = !isText ? value : shortName === undefined ? `#${hex(atv.bytes(valueTlv))}` : escapeRfc4514(value);
      rdnText += `${rdnText === "" ? "" : "+"}${shortName ?? oid}=${valueText}`;
      if (oid === OID.commonName) commonName ??= value;
      else if (oid === OID.organizationName) organizations.push(value);
      else if (oid === OID.organizationalUnitName) organizationalUnits.push(value);
    }
    rdns.push(rdn);
    texts.push(rdnText);
  }
  const text = texts.reverse().join(",");
  const base = { der: reader.bytes(tlv), rdns, text, organizations, organizationalUnits };
  return commonName === undefined ? base : { ...base, commonName };
}

// RFC 4514 §2.4: escape the specials anywhere, a leading '#' or space, a trailing space, and NUL.
const NEEDS_ESCAPE = /[\0"+,;<>\\]|^[ #]| $/;

export function escapeRfc4514(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    if (ch === "\0") out += "\\00";
    else if ('"+,;<>\\'.includes(ch)) out += `\\${ch}`;
    else if ((i === 0 && (ch === " " || ch === "#")) || (i === value.length - 1 && ch === " ")) out += `\\${ch}`;
    else out += ch;
  }
  return out;
}

function checkIssuable(buf: Uint8Array, tlv: Tlv, what: string): void {
  if (tlv.tag === Tag.VISIBLE_STRING) throw derError(`${what}: a VisibleString cannot be copied into a certificate (OpenSSL cannot read it back); use a UTF8String or PrintableString`, tlv.start);
  if (tlv.tag !== Tag.BMP_STRING) return;
  for (let i = tlv.contentStart; i + 1 < tlv.end; i += 2) {
    if ((buf[i]! & 0xf8) === 0xd8) throw derError(`${what}: a BMPString with surrogate pairs cannot be copied into a certificate (OpenSSL reads BMPString as UCS-2); use a UTF8String`, i);
  }
}

const GENERAL_NAME_TAGS = new Set([0xa0, 0x81, 0x82, 0xa3, 0xa4, 0xa5, 0x86, 0x87, 0x88]);

/** Decodes GeneralNames (SEQUENCE SIZE (1..MAX) OF GeneralName) from a subjectAltName extension value. */
export function readGeneralNames(reader: DerReader, what = "subjectAltName"): SubjectAltNames {
  const start = reader.offset;
  const seq = reader.sequence(what);
  const dns: string[] = [];
  const ip: string[] = [];
  const email: string[] = [];
  const uri: string[] = [];
  const other: number[] = [];
  if (!seq.hasMore()) throw derError(`${what}: empty GeneralNames`, start);
  while (seq.hasMore()) {
    const tlv = seq.next(undefined, `${what} entry`);
    if (!GENERAL_NAME_TAGS.has(tlv.tag)) throw derError(`${what}: ${tagName(tlv.tag)} is not a GeneralName`, tlv.start);
    const n = tlv.tag & 0x1f;
    if (n === 1 || n === 2 || n === 6) {
      const value = decodeString(seq.buf, { ...tlv, tag: Tag.IA5_STRING }, `${what} entry`);
      (n === 1 ? email : n === 2 ? dns : uri).push(value);
    } else if (n === 7) {
      const len = tlv.end - tlv.contentStart;
      if (len !== 4 && len !== 16) throw derError(`${what}: IP address of ${len} bytes (expected 4 or 16)`, tlv.start);
      ip.push(formatIp(seq.contents(tlv)));
    } else {
      other.push(n);
    }
  }
  return { dns, ip, email, uri, other };
}

/** An empty SubjectAltNames, for requests without the extension. */
export function noSans(): SubjectAltNames {
  return { dns: [], ip: [], email: [], uri: [], other: [] };
}

/** Dotted IPv4 for 4 bytes; RFC 5952 text for 16 bytes (IPv4-mapped as ::ffff:a.b.c.d, §5). */
export function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  if (bytes.length !== 16) throw new RangeError(`an IP address has 4 or 16 bytes, got ${bytes.length}`);
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  }
  // Longest run of two or more zero groups becomes '::'; the first wins a tie (RFC 5952 §4.2).
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const text = (gs: number[]): string => gs.map((g) => g.toString(16)).join(":");
  if (bestStart < 0) return text(groups);
  return `${text(groups.slice(0, bestStart))}::${text(groups.slice(bestStart + bestLen))}`;
}
