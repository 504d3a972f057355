// Argument checks, key ranges and the typed errors shared by every storage backend.
import { PlatformError } from "../../errors.js";
import type { ValueKind } from "./types.js";

/** Keys are printable ASCII paths so that every backend (JS, SQLite BINARY, etcd bytes) orders them alike. */
const KEY_RE = /^\/[\x21-\x7e]*$/;
const MAX_KEY_LENGTH = 1024;

/** Whether `key` is one storage can hold; callers that build keys from request input answer by it, not by checkKey's error. */
export function isStorableKey(key: unknown): key is string {
  return typeof key === "string" && key.length <= MAX_KEY_LENGTH && KEY_RE.test(key);
}

/** What a key built from a name may add to its prefix: printable ASCII other than space, and a bounded length. */
export function keyRoomProblem(prefix: string): string {
  return `must consist of printable ASCII characters other than space, at most ${Math.max(0, MAX_KEY_LENGTH - prefix.length)} of them here`;
}

export function checkKey(key: unknown): asserts key is string {
  if (!isStorableKey(key)) {
    throw new PlatformError("INVALID_ARGUMENT", `storage key must be a printable ASCII path starting with "/" of at most ${MAX_KEY_LENGTH} characters, got ${JSON.stringify(key)}`);
  }
}

export function checkPrefix(prefix: unknown): asserts prefix is string {
  if (prefix === "") return;
  checkKey(prefix);
}

/** A text backend takes JSON text; a bytes backend takes a Uint8Array (what a layer such as encryption at rest wrote). */
export function checkValue(value: unknown, kind: ValueKind): void {
  if (kind === "text" ? typeof value !== "string" : !(value instanceof Uint8Array)) {
    throw new PlatformError("INVALID_ARGUMENT", `storage value must be ${kind === "text" ? "JSON text" : "bytes"}, got ${typeof value}`);
  }
}

export function checkRevision(name: string, value: unknown, optional = true): void {
  if (optional && value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new PlatformError("INVALID_ARGUMENT", `${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
}

/** The smallest key greater than every key with this prefix (etcd's range end); DEL bounds the whole ASCII key space. */
export function prefixEnd(prefix: string): string {
  if (prefix === "") return "\x7f";
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

export function notFound(key: string): PlatformError {
  return new PlatformError("NOT_FOUND", `key ${key} not found`, { details: { key } });
}

export function alreadyExists(key: string): PlatformError {
  return new PlatformError("ALREADY_EXISTS", `key ${key} already exists`, { details: { key } });
}

export function conflict(key: string, expected: number, actual: number): PlatformError {
  return new PlatformError("CONFLICT", `key ${key} was modified: expected revision ${expected}, actual revision ${actual}`, {
    details: { key, expectedRevision: expected, actualRevision: actual },
  });
}

export function gone(revision: number, compacted: number): PlatformError {
  return new PlatformError("GONE", `revision ${revision} has been compacted; the oldest available revision is ${compacted}`, {
    details: { revision, compactedRevision: compacted },
  });
}

export function futureRevision(revision: number, current: number): PlatformError {
  return new PlatformError("TIMEOUT", `revision ${revision} is newer than the current revision ${current}`, {
    details: { revision, currentRevision: current },
  });
}

export function closed(): PlatformError {
  return new PlatformError("STORAGE_UNAVAILABLE", "storage is closed");
}
