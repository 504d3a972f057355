// The dev PKI's memory between runs (`<out>/.state.json`): a fingerprint of each manifest entry and of what was issued for it.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../pki/files.js";

export interface IssuedRecord {
  /** sha256 of the normalized manifest entry the material was made from. */
  readonly entry: string;
  /** sha256 (hex) of the certificate's DER. */
  readonly cert: string;
  /** For leaves: sha256 of the issuing CA certificate's DER. */
  readonly ca?: string;
}

export interface DevPkiState {
  readonly version: 1;
  readonly cas: Readonly<Record<string, IssuedRecord>>;
  readonly certificates: Readonly<Record<string, IssuedRecord>>;
}

export const STATE_FILE = ".state.json";

export function emptyState(): DevPkiState {
  return { version: 1, cas: {}, certificates: {} };
}

/** Reads the state; a missing or unreadable file means "nothing known", so everything present is re-checked. */
export async function readState(outDir: string): Promise<DevPkiState> {
  try {
    const parsed = JSON.parse(await readFile(join(outDir, STATE_FILE), "utf8")) as Partial<DevPkiState>;
    if (parsed.version !== 1 || typeof parsed.cas !== "object" || typeof parsed.certificates !== "object") return emptyState();
    return { version: 1, cas: parsed.cas ?? {}, certificates: parsed.certificates ?? {} };
  } catch {
    return emptyState();
  }
}

export async function writeState(outDir: string, state: DevPkiState): Promise<void> {
  await writeFileAtomic(join(outDir, STATE_FILE), `${JSON.stringify(state, null, 2)}\n`, 0o644);
}

/** sha256 of a value's canonical JSON (object keys sorted), so reordering a manifest entry changes nothing. */
export function fingerprint(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
