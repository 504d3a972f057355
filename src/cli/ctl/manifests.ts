// Objects named by -f: files, directories (-R recursive), stdin (-) and http(s) URLs; YAML streams, JSON and Lists.
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { text as streamText } from "node:stream/consumers";
import { parseAllDocuments } from "yaml";
import { YAML_READ, plainYamlValue } from "../../plain-data.js";
import type { ApiObject } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";

export interface Manifest {
  /** Where the object came from, for messages (`deploy/sa.yaml`, `STDIN`). */
  readonly source: string;
  readonly object: ApiObject;
}

export interface ReadOptions {
  readonly recursive?: boolean;
  /** Stdin for `-` (default process.stdin). */
  readonly stdin?: NodeJS.ReadableStream;
}

const MANIFEST_EXT = /\.(ya?ml|json)$/i;
const MAX_BYTES = 16 * 1024 * 1024;

/** Every object of every -f argument, in order. */
export async function readManifests(filenames: readonly string[], options: ReadOptions = {}): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const name of filenames) {
    for (const { source, text } of await readSource(name, options)) out.push(...parseManifestText(text, source));
  }
  return out;
}

async function readSource(name: string, o: ReadOptions): Promise<{ source: string; text: string }[]> {
  if (name === "-") return [{ source: "STDIN", text: await streamText(o.stdin ?? process.stdin) }];
  if (/^https?:\/\//i.test(name)) return [{ source: name, text: await fetchText(name) }];
  let info;
  try {
    info = await stat(name);
  } catch {
    throw new PlatformError("IO_ERROR", `the path "${name}" does not exist`);
  }
  if (!info.isDirectory()) return [{ source: name, text: await readText(name) }];
  const files = await listDirectory(name, o.recursive === true);
  return Promise.all(files.map(async (f) => ({ source: f, text: await readText(f) })));
}

async function listDirectory(dir: string, recursive: boolean): Promise<string[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  const out: string[] = [];
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (recursive) out.push(...(await listDirectory(path, true)));
    } else if (MANIFEST_EXT.test(e.name)) out.push(path);
  }
  return out;
}

async function readText(path: string): Promise<string> {
  try {
    const info = await stat(path);
    if (info.size > MAX_BYTES) throw new PlatformError("INPUT_TOO_LARGE", `${path} is larger than ${MAX_BYTES} bytes`);
    return await readFile(path, "utf8");
  } catch (err) {
    if (err instanceof PlatformError) throw err;
    throw new PlatformError("IO_ERROR", `error reading ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

async function fetchText(url: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    throw new PlatformError("IO_ERROR", `unable to read URL "${url}": ${(err as Error).message}`, { cause: err });
  }
  if (!res.ok) throw new PlatformError("IO_ERROR", `unable to read URL "${url}", server reported ${res.status} ${res.statusText}`);
  return res.text();
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Parses a YAML stream (JSON is YAML); `List` kinds are expanded; every object needs apiVersion, kind and a name. */
export function parseManifestText(text: string, source: string): Manifest[] {
  const out: Manifest[] = [];
  const docs = parseAllDocuments(text, { ...YAML_READ, uniqueKeys: false });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    let value: unknown;
    try {
      value = plainYamlValue(doc);
    } catch (err) {
      throw new PlatformError("INVALID_ARGUMENT", `error parsing ${source}${list.length > 1 ? ` (document ${i + 1})` : ""}: ${(err as Error).message}`);
    }
    if (value === null || value === undefined) return;
    const where = list.length > 1 ? `${source} (document ${i + 1})` : source;
    collect(value, where, out);
  });
  return out;
}

function collect(value: unknown, where: string, out: Manifest[]): void {
  if (!isObject(value)) throw new PlatformError("INVALID_ARGUMENT", `error parsing ${where}: expected an object, got ${Array.isArray(value) ? "a list" : typeof value}`);
  const missing = ["apiVersion", "kind"].filter((k) => typeof value[k] !== "string" || value[k] === "");
  if (missing.length > 0) throw new PlatformError("INVALID_ARGUMENT", `error validating ${where}: ${missing.map((k) => `${k} not set`).join(", ")}`);
  if (/List$/.test(value.kind as string) && Array.isArray(value.items)) {
    value.items.forEach((item, j) => collect(item, `${where} item ${j}`, out));
    return;
  }
  const metadata = isObject(value.metadata) ? value.metadata : {};
  if (typeof metadata.name !== "string" && typeof metadata.generateName !== "string") {
    throw new PlatformError("INVALID_ARGUMENT", `error validating ${where}: metadata.name not set`);
  }
  out.push({ source: where, object: { ...value, metadata } as unknown as ApiObject });
}
