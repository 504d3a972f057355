// Rewrites a CSR subject to keep only some attributes, reusing each kept attribute's original encoding.
import { sequence, setOf } from "../src/pki/der-writer.js";
import { DerReader, Tag } from "../src/pki/der.js";
import { readName } from "../src/pki/names.js";
import type { DistinguishedName, NameAttribute } from "../src/pki/types.js";

/**
 * The subject without the attributes `keep` rejects; RDNs left empty disappear. Attribute values keep their
 * string types byte for byte, so what stays reads exactly as the requester wrote it.
 */
export function keepSubjectAttributes(subject: DistinguishedName, keep: (attribute: NameAttribute) => boolean): DistinguishedName {
  const name = new DerReader(subject.der).sequence("subject");
  const sets: Uint8Array[] = [];
  for (const rdn of subject.rdns) {
    const set = name.set("subject RDN");
    const kept: Uint8Array[] = [];
    for (const attribute of rdn) {
      const atv = set.next(Tag.SEQUENCE, "subject attribute");
      if (keep(attribute)) kept.push(set.bytes(atv));
    }
    if (kept.length > 0) sets.push(setOf(...kept));
  }
  if (sets.length === subject.rdns.length && sets.every((_, i) => subject.rdns[i]!.every(keep))) return subject;
  return readName(new DerReader(sequence(...sets)), "subject");
}
