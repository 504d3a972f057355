// Plain data from JSON and YAML texts: the values every reader here works on (objects, arrays, strings, numbers,
// booleans, null), never a prototype key, a cycle or a YAML-only value.
import { type Document, type DocumentOptions, type ParseOptions, parseDocument, type SchemaOptions } from "yaml";

/** Why a text holds no plain value; the message is one line and names the problem. */
export class PlainDataError extends Error {
  override name = "PlainDataError";
}

/** YAML's own aliases are bounded too (a "billion laughs" document is refused, not expanded). */
const MAX_ALIASES = 100;

/**
 * The deepest nesting of objects and arrays a decoded text may have (the top-level object is level 1). Upstream
 * refuses beyond 10,000; this server stops far lower because every later step must still work on what it
 * accepted: YAML output, the deepest-recursing of them, overflows the stack from about 600 levels (docs/api.md).
 */
export const MAX_NESTING_DEPTH = 400;

export const NESTING_MESSAGE = `the value is nested more than ${MAX_NESTING_DEPTH} levels deep (objects and arrays); flatten it`;

/**
 * The first problem of a decoded value, walked without recursion: nesting deeper than MAX_NESTING_DEPTH, or a
 * `__proto__` key (a later copy or merge could reach a prototype through one, and dropping it would lose what the
 * sender meant, so it is refused with a message that names the key).
 */
export function plainValueProblem(value: unknown): string | undefined {
  // Two stacks side by side, not one of [value, depth] pairs: this runs on every request body.
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > MAX_NESTING_DEPTH) return NESTING_MESSAGE;
    if (Array.isArray(v)) {
      for (const item of v) {
        values.push(item);
        depths.push(depth + 1);
      }
      continue;
    }
    if (Object.hasOwn(v, "__proto__")) return 'the key "__proto__" is not accepted (it names an object\'s prototype); rename it';
    const obj = v as Record<string, unknown>;
    for (const k in obj) {
      if (!Object.hasOwn(obj, k)) continue;
      values.push(obj[k]);
      depths.push(depth + 1);
    }
  }
  return undefined;
}

/**
 * A deep copy of plain JSON data (objects, arrays, strings, numbers, booleans, null), safe to mutate. structuredClone
 * took ten times as long on a CSR's spec (its serializer handles every kind of value); anything that is not a plain
 * object or array (a Date, a Buffer) is still copied by it. An own `__proto__` key stays a key.
 */
export function copyPlain<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyPlain(value[i]);
    return out as T;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) {
    const v = copyPlain((value as Record<string, unknown>)[k]);
    if (k === "__proto__") Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out as T;
}

/**
 * Running out of stack, the only way a parser here fails on a deeply nested input: V8's RangeError, or the yaml
 * package's error that carries its message.
 */
export const isStackOverflow = (err: unknown): boolean => err instanceof Error && /Maximum call stack size exceeded/.test(err.message);

/**
 * JSON.parse, then refuses deep nesting and prototype keys (plainValueProblem). JSON.parse itself does not
 * recurse, and a text shorter than the depth bound cannot reach it; a syntax error is a PlainDataError with
 * JSON.parse's message.
 */
export function parsePlainJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new PlainDataError(isStackOverflow(err) ? NESTING_MESSAGE : (err as Error).message);
  }
  // The walk costs (about a fifth of the parse of a CSR body, when it ran for every body over 400 characters): a key
  // can only spell __proto__ literally or with \u escapes, and a text nests no deeper than it has opening brackets.
  if (text.includes("__proto__") || text.includes("\\u") || moreBracketsThan(text, MAX_NESTING_DEPTH)) {
    const problem = plainValueProblem(value);
    if (problem) throw new PlainDataError(problem);
  }
  return value;
}

/**
 * Whether the text has more than `bound` opening brackets (`{` or `[`, inside strings too): counted with indexOf, which
 * visits only the brackets, and stopped at the bound. Fewer cannot nest deeper than the bound.
 */
function moreBracketsThan(text: string, bound: number): boolean {
  let count = 0;
  for (const bracket of ["{", "["]) {
    for (let at = text.indexOf(bracket); at >= 0; at = text.indexOf(bracket, at + 1)) {
      if (++count > bound) return true;
    }
  }
  return false;
}

/** The first line of a parser message, without the colon that introduced the code frame after it. */
const firstLine = (message: string) => message.split("\n")[0]!.trim().replace(/:$/, "");

/**
 * The plain value of one parsed YAML document (null when it is empty). YAML-only values are normalized as they are
 * when a YAML body becomes JSON: tags resolve, non-string keys become strings, `.nan` and `.inf` become null.
 * An alias without its anchor, an alias inside the node it names (a cycle), too many aliases and a syntax error
 * are PlainDataErrors; nothing else escapes.
 */
export function plainYamlValue(doc: Document.Parsed): unknown {
  const syntax = doc.errors[0];
  if (syntax) throw new PlainDataError(isStackOverflow(syntax) ? NESTING_MESSAGE : firstLine(syntax.message));
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    throw new PlainDataError(isStackOverflow(err) ? NESTING_MESSAGE : firstLine((err as Error).message));
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw new PlainDataError(isStackOverflow(err) ? NESTING_MESSAGE : "an alias refers to a node that contains it; a cycle has no plain value");
  }
  return json === undefined ? null : parsePlainJson(json);
}

export type YamlOptions = ParseOptions & DocumentOptions & SchemaOptions;

/**
 * How every YAML text here is read: `<<` merge keys work as they do for other clients of this API (YAML 1.1's
 * merge, which Go's YAML readers apply), and YAML's warnings (an unknown tag, a collection used as a key) are not
 * printed to the process's stderr.
 */
export const YAML_READ: YamlOptions = { logLevel: "error", merge: true };

/** Parses one YAML document (JSON is YAML) into its plain value, read as YAML_READ says. */
export function parsePlainYaml(text: string, options: YamlOptions = {}): unknown {
  return plainYamlValue(parseYaml(text, () => parseDocument(text, { ...YAML_READ, ...options })));
}

/**
 * How deep a YAML text may look before it is parsed. The parser recurses once per level, and deep enough it fails
 * not with a RangeError but by aborting the process (V8 compiling a regular expression without stack), so a text
 * is measured first; the margin over MAX_NESTING_DEPTH keeps texts at the bound parseable, and still far from the
 * parser's limit (about 800 levels).
 */
const YAML_SCAN_LIMIT = MAX_NESTING_DEPTH + 100;

/**
 * An upper bound of a YAML text's nesting, without parsing it: the deepest flow nesting (`[`, `{` outside quoted
 * scalars and comments) plus, for each line, twice its indentation and its leading `- ` / `? ` indicators (a block
 * collection needs one more column or one indicator, and a sequence may share its mapping's column). A quote opens
 * a quoted scalar only where a scalar starts (not in `don't`), and may span lines; block scalar content (after a
 * `|` or `>` header) is skipped. Brackets in plain scalars only make the bound larger.
 */
export function yamlNestingBound(text: string): number {
  let flow = 0;
  let deepest = 0;
  let quote = "";
  let scalarIndent = -1;
  for (const line of text.split("\n")) {
    const indent = line.length - line.trimStart().length;
    if (!quote && scalarIndent >= 0 && (indent > scalarIndent || line.trim() === "")) continue;
    scalarIndent = -1;
    let i = quote ? 0 : indent;
    let indicators = 0;
    while (!quote && (line[i] === "-" || line[i] === "?") && (line[i + 1] === " " || i + 1 === line.length)) [i, indicators] = [i + 2, indicators + 1];
    let lineFlow = flow;
    let previous = " ";
    let codeEnd = line.length;
    for (; i < line.length; i++) {
      const c = line[i]!;
      if (quote) {
        if (c === "\\" && quote === '"') i++;
        else if (c === quote) quote = "";
        continue;
      }
      if ((c === '"' || c === "'") && (previous === " " || ":-[{,?".includes(previous))) quote = c;
      else if (c === "#" && (i === 0 || line[i - 1] === " " || line[i - 1] === "\t")) {
        codeEnd = i;
        break;
      } else if (c === "[" || c === "{") lineFlow = Math.max(lineFlow, ++flow);
      else if ((c === "]" || c === "}") && flow > 0) flow--;
      if (c !== " " && c !== "\t") previous = c;
    }
    deepest = Math.max(deepest, lineFlow + 2 * (indent + indicators) + 2);
    if (!quote && flow === 0 && /(^|[:-] )[|>][-+0-9]*$/.test(line.slice(0, codeEnd).trim())) scalarIndent = indent;
  }
  return deepest;
}

/**
 * Runs a YAML parse of `text` once yamlNestingBound says it is shallow enough; deeper texts, and running out of
 * stack all the same, are the nesting bound's PlainDataError.
 */
export function parseYaml<T>(text: string, parse: () => T): T {
  if (yamlNestingBound(text) > YAML_SCAN_LIMIT) throw new PlainDataError(NESTING_MESSAGE);
  try {
    return parse();
  } catch (err) {
    if (isStackOverflow(err)) throw new PlainDataError(NESTING_MESSAGE);
    throw err;
  }
}
