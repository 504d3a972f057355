// What an event says and is named: references to the objects it is about, truncation to the seed limits, event names.
import type { ApiObject } from "../api/meta.js";
import type { ObjectReference } from "../api/types/core.js";

export function toReference(obj: ObjectReference | ApiObject): ObjectReference {
  if (!("metadata" in obj) || typeof obj.metadata !== "object" || obj.metadata === null) return obj as ObjectReference;
  const o = obj as ApiObject;
  const ref: ObjectReference = { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name };
  if (o.metadata.namespace) ref.namespace = o.metadata.namespace;
  if (o.metadata.uid) ref.uid = o.metadata.uid;
  if (o.metadata.resourceVersion) ref.resourceVersion = o.metadata.resourceVersion;
  return ref;
}

export function truncateChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  // Do not leave half of a surrogate pair at the end.
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** Cuts UTF-8 text to at most `max` bytes without splitting a character. */
export function truncateBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= max) return text;
  let end = max;
  // Step back over continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

/**
 * Event names must be DNS subdomains, but the objects they are about may have names that are not (trust bundles
 * carry `:`, CSR names may have upper case): keep what is allowed, map the rest to `-`, and leave room for the suffix.
 */
export function eventNamePrefix(regardingName: string): string {
  const cleaned = regardingName
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 230)
    .replace(/[^a-z0-9]+$/, "");
  return cleaned || "object";
}
