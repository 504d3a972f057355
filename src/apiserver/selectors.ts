// Label and field selectors of list, watch and deletecollection requests: parsing (errors are 400s) and matching.
import { PlatformError } from "../errors.js";
import type { ApiObject } from "../api/meta.js";
import { labelValueProblem, qualifiedNameProblem } from "../api/names.js";
import type { LabelSelector } from "../api/types/rbac.js";

export type LabelOperator = "=" | "!=" | "in" | "notin" | "exists" | "!exists";

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: readonly string[];
}

/**
 * A selector over decoded objects; `mayMatch`, when set, is a cheap necessary condition on the stored JSON text,
 * checked first so that objects which cannot match are never decoded.
 */
export interface ObjectFilter {
  (obj: ApiObject): boolean;
  readonly mayMatch?: (text: string) => boolean;
}

export interface FieldRequirement {
  readonly field: string;
  readonly operator: "=" | "!=";
  readonly value: string;
}

function badSelector(kind: string, text: string, why: string): PlatformError {
  return new PlatformError("BAD_REQUEST", `unable to parse requirement: invalid ${kind} selector ${JSON.stringify(text)}: ${why}`);
}

/** Splits on commas that are outside parentheses. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

const SET_RE = /^(\S+?)\s+(in|notin)\s*\(([^()]*)\)$/;
const EQ_RE = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/;

/** Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h`. Empty text selects everything. */
export function parseLabelSelector(text: string): LabelRequirement[] {
  if (text.trim() === "") return [];
  return splitTop(text).map((raw) => {
    const part = raw.trim();
    const checkKey = (key: string): string => {
      const why = qualifiedNameProblem(key);
      if (why) throw badSelector("label", text, `key ${JSON.stringify(key)}: ${why}`);
      return key;
    };
    const checkValue = (value: string): string => {
      const why = labelValueProblem(value);
      if (why) throw badSelector("label", text, `value ${JSON.stringify(value)}: ${why}`);
      return value;
    };
    if (part === "") throw badSelector("label", text, "empty requirement");
    const set = SET_RE.exec(part);
    if (set) {
      const values = set[3]!.split(",").map((v) => checkValue(v.trim()));
      if (values.length === 1 && values[0] === "" && set[3]!.trim() === "") {
        throw badSelector("label", text, `${set[2]} needs at least one value`);
      }
      return { key: checkKey(set[1]!), operator: set[2] as "in" | "notin", values };
    }
    const eq = EQ_RE.exec(part);
    if (eq) {
      const operator = eq[2] === "!=" ? "!=" : "=";
      return { key: checkKey(eq[1]!), operator, values: [checkValue(eq[3]!.trim())] };
    }
    if (part.startsWith("!")) return { key: checkKey(part.slice(1).trim()), operator: "!exists", values: [] };
    return { key: checkKey(part), operator: "exists", values: [] };
  });
}

/**
 * Whether labels satisfy a LabelSelector object (`matchLabels` and `matchExpressions`, all of them): an empty
 * selector selects everything, as upstream's LabelSelectorAsSelector.
 */
export function labelSelectorMatches(s: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const ops = { In: "in", NotIn: "notin", Exists: "exists", DoesNotExist: "!exists" } as const;
  const requirements: LabelRequirement[] = [
    ...Object.entries(s.matchLabels ?? {}).map(([key, value]) => ({ key, operator: "=" as const, values: [value] })),
    ...(s.matchExpressions ?? []).map((e) => ({ key: e.key, operator: ops[e.operator], values: e.values ?? [] })),
  ];
  return matchesLabels(requirements, labels ?? {});
}

/**
 * A cheap necessary condition on an object's stored JSON text for the selectors to hold: the value of each label `=`
 * and `in` requirement, and of each field `=` requirement but an empty one (a missing field selects as ""), must appear
 * in it as a JSON string — stored text is JSON.stringify's, which writes a string the same way wherever it stands, and
 * every selectable field is a string field of the object (ResourceDefinition.fieldSelectors). False means the object
 * cannot match, without decoding it; true decides nothing. Undefined when no requirement gives a value to look for.
 */
export function selectorTextHint(labels: readonly LabelRequirement[], fields: readonly FieldRequirement[] = []): ((text: string) => boolean) | undefined {
  const wanted = [
    ...labels.filter((r) => r.operator === "=" || r.operator === "in").map((r) => r.values.map((v) => JSON.stringify(v))),
    ...fields.filter((r) => r.operator === "=" && r.value !== "").map((r) => [JSON.stringify(r.value)]),
  ];
  if (wanted.length === 0) return undefined;
  return (text) => wanted.every((anyOf) => anyOf.some((v) => text.includes(v)));
}

export function matchesLabels(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  for (const r of requirements) {
    const has = labels !== undefined && Object.hasOwn(labels, r.key);
    const value = has ? labels[r.key] : undefined;
    switch (r.operator) {
      case "=":
        if (value !== r.values[0]) return false;
        break;
      case "!=":
        if (has && value === r.values[0]) return false;
        break;
      case "in":
        if (!has || !r.values.includes(value!)) return false;
        break;
      case "notin":
        if (has && r.values.includes(value!)) return false;
        break;
      case "exists":
        if (!has) return false;
        break;
      case "!exists":
        if (has) return false;
        break;
    }
  }
  return true;
}

/** Splits field-selector text on unescaped commas and unescapes `\,` `\=` `\\` in values. */
function splitEscaped(text: string, sep: string): string[] {
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\\" && i + 1 < text.length) {
      cur += ch + text[i + 1];
      i++;
    } else if (ch === sep) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

const unescape = (s: string): string => s.replace(/\\(.)/g, "$1");

/** Parses `metadata.name=x,spec.signerName!=y`; every field must be in `supported`. */
export function parseFieldSelector(text: string, supported: readonly string[]): FieldRequirement[] {
  if (text.trim() === "") return [];
  return splitEscaped(text, ",").map((raw) => {
    const part = raw.trim();
    const m = /^([^=!\s]+)\s*(==|=|!=)(.*)$/s.exec(part);
    if (!m) throw badSelector("field", text, `${JSON.stringify(part)} is not of the form field=value, field==value or field!=value`);
    const field = m[1]!;
    if (!supported.includes(field)) {
      throw new PlatformError("BAD_REQUEST", `field label not supported: ${field} (supported: ${supported.join(", ")})`);
    }
    return { field, operator: m[2] === "!=" ? "!=" : "=", value: unescape(m[3]!) };
  });
}

export function matchesFields(requirements: readonly FieldRequirement[], valueOf: (field: string) => string | undefined): boolean {
  for (const r of requirements) {
    const v = valueOf(r.field) ?? "";
    if (r.operator === "=" ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/** Field values every object offers to field selectors. */
export function metadataField(obj: ApiObject, field: string): string | undefined {
  if (field === "metadata.name") return obj.metadata?.name;
  if (field === "metadata.namespace") return obj.metadata?.namespace ?? "";
  return undefined;
}
