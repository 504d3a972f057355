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
 * Refuses `__proto__` keys while JSON.parse builds objects: a later copy or merge could reach a prototype through
 * one, and dropping it would lose what the sender meant, so the text is refused with a message that names the key.
 */
function refuseProtoKeys(_key: string, value: unknown): unknown {
  if (value && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, "__proto__")) {
    throw new PlainDataError('the key "__proto__" is not accepted (it names an object\'s prototype); rename it');
  }
  return value;
}

/** JSON.parse that refuses prototype keys; a syntax error is a PlainDataError with JSON.parse's message. */
export function parsePlainJson(text: string): unknown {
  try {
    // The reviver costs; a key can only spell __proto__ literally or with \u escapes.
    return text.includes("__proto__") || text.includes("\\u") ? JSON.parse(text, refuseProtoKeys) : JSON.parse(text);
  } catch (err) {
    if (err instanceof PlainDataError) throw err;
    throw new PlainDataError((err as Error).message);
  }
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
  if (syntax) throw new PlainDataError(firstLine(syntax.message));
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    throw new PlainDataError(firstLine((err as Error).message));
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    throw new PlainDataError("an alias refers to a node that contains it; a cycle has no plain value");
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
  return plainYamlValue(parseDocument(text, { ...YAML_READ, ...options }));
}
