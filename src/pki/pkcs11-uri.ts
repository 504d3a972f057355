// RFC 7512 `pkcs11:` URIs naming a CA key in a token: path attributes before `?`, query attributes after it.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { PlatformError } from "../errors.js";

/** What a `pkcs11:` URI says about a key; every field optional except that the key must be named. */
export interface Pkcs11KeyRef {
  /** The URI as written, with any PIN value masked (for messages). */
  readonly display: string;
  readonly token?: string;
  readonly serial?: string;
  readonly manufacturer?: string;
  readonly model?: string;
  readonly slotId?: number;
  /** CKA_LABEL of the key. */
  readonly object?: string;
  /** CKA_ID of the key (raw bytes). */
  readonly id?: Uint8Array;
  readonly type?: "private" | "public" | "cert" | "secret" | "data";
  readonly modulePath?: string;
  readonly moduleName?: string;
  readonly pinValue?: string;
  /** `file:/path` (RFC 7512) or `env:NAME` (an environment variable). */
  readonly pinSource?: string;
}

const PATH_ATTRIBUTES = new Set(["token", "serial", "manufacturer", "model", "slot-id", "slot-description", "slot-manufacturer", "library-manufacturer", "library-description", "library-version", "object", "id", "type"]);
const QUERY_ATTRIBUTES = new Set(["module-path", "module-name", "pin-value", "pin-source"]);
const TYPES = new Set(["private", "public", "cert", "secret", "data"]);
/** RFC 7512 pchar/qchar plus the percent escapes; anything else must be percent-encoded. */
const ALLOWED = /^[A-Za-z0-9\-._~!$&'()*+,=:@/%]*$/;

export function isPkcs11Uri(value: string): boolean {
  return typeof value === "string" && value.slice(0, 7).toLowerCase() === "pkcs11:";
}

/** A key reference resolved against `baseDir` when it is a file path; `pkcs11:` URIs are kept as written. */
export function resolveKeyRef(baseDir: string, ref: string): string {
  return isPkcs11Uri(ref) ? ref : resolve(baseDir, ref);
}

function invalid(uri: string, why: string): PlatformError {
  return new PlatformError("HSM_URI_INVALID", `invalid PKCS#11 URI ${maskPin(uri)}: ${why}`);
}

/** The URI with pin-value replaced, so it can be shown and logged. */
export function maskPin(uri: string): string {
  return uri.replace(/([;?&]pin-value=)[^;&]*/gi, "$1***");
}

function decode(uri: string, raw: string, name: string): Uint8Array {
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i += 1) {
    const ch = raw[i]!;
    if (ch !== "%") {
      bytes.push(...Buffer.from(ch, "utf8"));
      continue;
    }
    const pair = raw.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(pair)) throw invalid(uri, `attribute ${name} has a bad percent-escape "%${pair}"`);
    bytes.push(Number.parseInt(pair, 16));
    i += 2;
  }
  return Uint8Array.from(bytes);
}

function text(uri: string, bytes: Uint8Array, name: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalid(uri, `attribute ${name} is not UTF-8 once decoded`);
  }
}

/** Parses a `pkcs11:` URI naming one private key; HSM_URI_INVALID with the reason otherwise. */
export function parsePkcs11Uri(uri: string): Pkcs11KeyRef {
  if (typeof uri !== "string" || !isPkcs11Uri(uri)) throw invalid(String(uri), 'it must start with "pkcs11:"');
  const body = uri.slice(7);
  const q = body.indexOf("?");
  const path = q < 0 ? body : body.slice(0, q);
  const query = q < 0 ? "" : body.slice(q + 1);
  const values = new Map<string, Uint8Array>();
  const take = (part: string, separator: string, known: Set<string>, where: string) => {
    if (part === "") return;
    for (const item of part.split(separator)) {
      if (item === "") throw invalid(uri, `empty attribute in the ${where}`);
      if (!ALLOWED.test(item)) throw invalid(uri, `attribute "${item}" has characters that must be percent-encoded`);
      const eq = item.indexOf("=");
      if (eq <= 0) throw invalid(uri, `attribute "${item}" is not name=value`);
      const name = item.slice(0, eq).toLowerCase();
      // RFC 7512 §2.3: vendor attributes start with x-; they are allowed and ignored here.
      if (name.startsWith("x-") && name.length > 2) continue;
      if (!known.has(name)) {
        const other = known === PATH_ATTRIBUTES ? QUERY_ATTRIBUTES : PATH_ATTRIBUTES;
        throw invalid(uri, other.has(name) ? `${name} belongs in the ${where === "path" ? "query (after ?)" : "path (before ?)"}` : `unknown ${where} attribute ${name}`);
      }
      if (values.has(name)) throw invalid(uri, `attribute ${name} is given twice`);
      values.set(name, decode(uri, item.slice(eq + 1), name));
    }
  };
  if (path.includes("?")) throw invalid(uri, "more than one ?");
  take(path, ";", PATH_ATTRIBUTES, "path");
  take(query, "&", QUERY_ATTRIBUTES, "query");
  const str = (name: string) => (values.has(name) ? text(uri, values.get(name)!, name) : undefined);
  const type = str("type");
  if (type !== undefined && !TYPES.has(type)) throw invalid(uri, `type must be one of ${[...TYPES].join(", ")}, got ${type}`);
  if (type !== undefined && type !== "private") throw invalid(uri, `a CA key is a private key; type=${type} cannot sign`);
  const slot = str("slot-id");
  if (slot !== undefined && !/^\d{1,10}$/.test(slot)) throw invalid(uri, `slot-id must be a decimal number, got ${slot}`);
  const object = str("object");
  const id = values.get("id");
  if (object === undefined && id === undefined) throw invalid(uri, "it must name the key with object= (label) or id=");
  if (values.has("pin-value") && values.has("pin-source")) throw invalid(uri, "give pin-value or pin-source, not both");
  const pinSource = str("pin-source");
  if (pinSource !== undefined && !/^(file:.+|env:[A-Za-z_][A-Za-z0-9_]*)$/.test(pinSource)) {
    throw invalid(uri, `pin-source must be file:/path or env:NAME, got ${pinSource}`);
  }
  const fields: Record<string, unknown> = {
    display: maskPin(uri),
    token: str("token"),
    serial: str("serial"),
    manufacturer: str("manufacturer"),
    model: str("model"),
    slotId: slot === undefined ? undefined : Number(slot),
    object,
    id,
    type,
    modulePath: str("module-path"),
    moduleName: str("module-name"),
    pinValue: str("pin-value"),
    pinSource,
  };
  for (const key of Object.keys(fields)) if (fields[key] === undefined) delete fields[key];
  return fields as unknown as Pkcs11KeyRef;
}

/** The user PIN the URI points at: its pin-value, a file (trailing newline dropped) or an environment variable. */
export function readPin(ref: Pkcs11KeyRef, env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  if (ref.pinValue !== undefined) return ref.pinValue;
  const source = ref.pinSource;
  if (source === undefined) return undefined;
  if (source.startsWith("env:")) {
    const value = env[source.slice(4)];
    if (value === undefined) throw new PlatformError("HSM_LOGIN_FAILED", `${ref.display}: environment variable ${source.slice(4)} (pin-source) is not set`);
    return value;
  }
  const file = source.slice(5).replace(/^\/\/(localhost)?(?=\/)/, "");
  try {
    return readFileSync(file, "utf8").replace(/\r?\n$/, "");
  } catch (err) {
    throw new PlatformError("HSM_LOGIN_FAILED", `${ref.display}: cannot read the PIN file ${file}: ${(err as Error).message}`, { cause: err });
  }
}
