// Typed field reads over a parsed config document, collecting every problem as a cause that names its field.
import { Buffer } from "node:buffer";
import { PlatformError, type ErrorCause } from "../errors.js";

export type Doc = Readonly<Record<string, unknown>>;

const BASE64_RE = /^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/;

/** Reads fields of one file; `fail()` turns the collected problems into one CONFIG_INVALID error. */
export class FieldReader {
  readonly #file: string;
  readonly #issues: ErrorCause[] = [];

  constructor(file: string) {
    this.#file = file;
  }

  problem(field: string, message: string): void {
    this.#issues.push({ field, message });
  }

  get ok(): boolean {
    return this.#issues.length === 0;
  }

  /** Throws CONFIG_INVALID naming the file and the first field, with every problem as a cause. */
  fail(): void {
    const [first] = this.#issues;
    if (!first) return;
    const more = this.#issues.length > 1 ? ` (and ${this.#issues.length - 1} more)` : "";
    throw new PlatformError("CONFIG_INVALID", `client config ${this.#file}: ${first.field}: ${first.message}${more}`, {
      causes: this.#issues,
      details: { file: this.#file },
    });
  }

  object(value: unknown, field: string): Doc | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "object" || Array.isArray(value)) {
      this.problem(field, `expected a mapping, got ${describe(value)}`);
      return undefined;
    }
    return value as Doc;
  }

  list(value: unknown, field: string): unknown[] {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) {
      this.problem(field, `expected a list, got ${describe(value)}`);
      return [];
    }
    return value;
  }

  string(doc: Doc, key: string, field: string): string | undefined {
    const value = doc[key];
    if (value === undefined || value === null || value === "") return undefined;
    if (typeof value !== "string") {
      this.problem(`${field}.${key}`, `expected a string, got ${describe(value)}`);
      return undefined;
    }
    return value;
  }

  requiredString(doc: Doc, key: string, field: string): string | undefined {
    const value = this.string(doc, key, field);
    if (value === undefined && (doc[key] === undefined || doc[key] === null || doc[key] === "")) this.problem(`${field}.${key}`, "is required");
    return value;
  }

  boolean(doc: Doc, key: string, field: string): boolean | undefined {
    const value = doc[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "boolean") {
      this.problem(`${field}.${key}`, `expected true or false, got ${describe(value)}`);
      return undefined;
    }
    return value;
  }

  strings(doc: Doc, key: string, field: string): string[] | undefined {
    const value = doc[key];
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
      this.problem(`${field}.${key}`, `expected a list of strings, got ${describe(value)}`);
      return undefined;
    }
    return value as string[];
  }

  /** A `*-data` field: base64 of PEM text, decoded. */
  base64(doc: Doc, key: string, field: string): string | undefined {
    const value = this.string(doc, key, field);
    if (value === undefined) return undefined;
    if (!BASE64_RE.test(value.trim())) {
      this.problem(`${field}.${key}`, "is not valid base64 (the field holds base64 of the PEM text)");
      return undefined;
    }
    return Buffer.from(value, "base64").toString("utf8");
  }
}

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return `${typeof value} ${JSON.stringify(value)}`;
}
