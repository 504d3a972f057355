// Stored objects as storage holds them (JSON text without resourceVersion) and the one serialization layout we write.
import type { ApiObject } from "../../api/meta.js";
import type { KeyValue } from "../storage/types.js";
import { PlatformError } from "../../errors.js";

const META = '"metadata":{';

/**
 * Serializes with apiVersion, kind and metadata first and without resourceVersion, so that
 * `withResourceVersion` can splice the version into the text without parsing it (the LIST fast path).
 */
export function serializeForStorage(obj: ApiObject): string {
  const { apiVersion, kind, metadata, ...rest } = obj;
  const { resourceVersion: _rv, ...meta } = metadata;
  return JSON.stringify({ apiVersion, kind, metadata: meta, ...rest });
}

/** The stored text with `metadata.resourceVersion` set, produced by splicing rather than parse + stringify. */
export function withResourceVersion(text: string, revision: number): string {
  const at = text.indexOf(META);
  if (at < 0) throw new PlatformError("INTERNAL", "stored object has no metadata");
  const insertAt = at + META.length;
  const empty = text[insertAt] === "}";
  return `${text.slice(0, insertAt)}"resourceVersion":"${revision}"${empty ? "" : ","}${text.slice(insertAt)}`;
}

/** Parses stored text and sets resourceVersion from the revision that wrote it. */
export function decodeStored(text: string, revision: number): ApiObject {
  const obj = JSON.parse(text) as ApiObject;
  obj.metadata = { ...obj.metadata, resourceVersion: String(revision) };
  return obj;
}

/** One object read from storage or the watch cache: its text, revision and (lazily) the decoded object. */
export class StoredObject {
  #object: ApiObject | undefined;

  constructor(
    readonly key: string,
    readonly text: string,
    readonly revision: number,
    object?: ApiObject,
  ) {
    this.#object = object;
  }

  static of(kv: KeyValue): StoredObject {
    return new StoredObject(kv.key, kv.value, kv.modRevision);
  }

  /** The decoded object with resourceVersion; shared, so callers that mutate must copy. */
  get object(): ApiObject {
    this.#object ??= decodeStored(this.text, this.revision);
    return this.#object;
  }

  /** JSON text with resourceVersion, without a parse. */
  json(): string {
    return withResourceVersion(this.text, this.revision);
  }
}
