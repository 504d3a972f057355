// kubectl's JSONPath templates (`-o jsonpath=…`): text with {…} actions, fields, [*], slices, unions, filters, range/end.
import { PlatformError } from "../../../errors.js";
import { sortKeys } from "./sort-keys.js";

type Json = unknown;

/** One step of a path: applied to every current value, it yields the next values. */
type Step =
  | { readonly t: "root" }
  | { readonly t: "field"; readonly names: readonly string[] }
  | { readonly t: "recursive" }
  /** `.*` (a map's values or a list's items) or `[*]` (a list's items only, as kubectl allows). */
  | { readonly t: "wildcard"; readonly listOnly?: boolean }
  | { readonly t: "index"; readonly items: readonly (number | { start?: number; end?: number; step?: number })[] }
  | { readonly t: "filter"; readonly left: readonly Step[]; readonly op?: string; readonly right?: Operand };

type Operand = { readonly t: "path"; readonly steps: readonly Step[] } | { readonly t: "literal"; readonly value: Json };

type Node =
  | { readonly t: "text"; readonly text: string }
  | { readonly t: "expr"; readonly steps: readonly Step[] }
  | { readonly t: "range"; readonly steps: readonly Step[]; readonly body: readonly Node[] };

export interface JsonPathOptions {
  /** Missing fields and out-of-range indexes yield nothing instead of an error (kubectl default: true). */
  readonly allowMissingKeys?: boolean;
  /** `jsonpath-as-json`: every result in one indented JSON array. */
  readonly asJson?: boolean;
}

const parseError = (template: string, why: string): PlatformError =>
  new PlatformError("INVALID_OPTION", `error parsing jsonpath ${template}: ${why}`);

/** A parsed template, reusable across objects. */
export class JsonPath {
  readonly #nodes: readonly Node[];

  constructor(readonly template: string) {
    this.#nodes = parseTemplate(template);
  }

  /** Renders `data`; missing keys follow `allowMissingKeys`. */
  execute(data: Json, options: JsonPathOptions = {}): string {
    const allowMissing = options.allowMissingKeys ?? true;
    let text = "";
    const run = (nodes: readonly Node[], current: Json): void => {
      for (const node of nodes) {
        if (node.t === "text") {
          // As kubectl: with JSON output every printed piece is its own array.
          text += options.asJson ? asJsonArray([node.text]) : node.text;
        } else if (node.t === "expr") {
          const values = evaluate(node.steps, data, current, allowMissing);
          text += options.asJson ? asJsonArray(values) : values.map(printable).join(" ");
        } else {
          for (const item of evaluate(node.steps, data, current, allowMissing)) run(node.body, item);
        }
      }
    };
    try {
      run(this.#nodes, data);
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      throw new PlatformError("INVALID_ARGUMENT", `error executing jsonpath ${JSON.stringify(this.template)}: ${(err as Error).message}`);
    }
    return text;
  }

  /**
   * The values of each action of the template, without printing them (kubectl's FindResults): what custom columns
   * print and --sort-by compares. Missing fields yield no values.
   */
  results(data: Json): Json[][] {
    const out: Json[][] = [];
    try {
      for (const node of this.#nodes) if (node.t === "expr") out.push(evaluate(node.steps, data, data, true));
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      throw new PlatformError("INVALID_ARGUMENT", `error executing jsonpath ${JSON.stringify(this.template)}: ${(err as Error).message}`);
    }
    return out;
  }
}

function asJsonArray(values: readonly Json[]): string {
  return `${JSON.stringify(sortKeys(values), null, 4)}\n`;
}

function printable(value: Json): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return value;
  if (typeof value === "object") return JSON.stringify(sortKeys(value));
  return String(value);
}

// --- parsing ---

function parseTemplate(template: string): Node[] {
  const root: Node[] = [];
  const stack: { body: Node[]; steps: Step[] }[] = [];
  let body = root;
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf("{", i);
    if (open < 0) {
      body.push({ t: "text", text: template.slice(i) });
      break;
    }
    if (open > i) body.push({ t: "text", text: template.slice(i, open) });
    const close = findClose(template, open);
    if (close < 0) throw parseError(template, "unclosed action");
    const action = template.slice(open + 1, close).trim();
    i = close + 1;
    if (action === "end") {
      const frame = stack.pop();
      if (!frame) throw parseError(template, "not in range, nothing to end");
      body = stack.length > 0 ? stack[stack.length - 1]!.body : root;
      body.push({ t: "range", steps: frame.steps, body: frame.body });
    } else if (/^range\s/.test(action)) {
      const frame = { body: [] as Node[], steps: parsePath(action.slice(6).trim(), template) };
      stack.push(frame);
      body = frame.body;
    } else if (/^"/.test(action) || /^'/.test(action)) {
      body.push({ t: "text", text: unquote(action, template) });
    } else if (action === "") {
      continue;
    } else {
      body.push({ t: "expr", steps: parsePath(action, template) });
    }
  }
  if (stack.length > 0) throw parseError(template, "unclosed range, missing {end}");
  return root;
}

/** The `}` closing the action at `open`, skipping quoted text. */
function findClose(s: string, open: number): number {
  let quote: string | undefined;
  for (let i = open + 1; i < s.length; i++) {
    const ch = s[i]!;
    if (quote) {
      if (ch === "\\") i++;
      else if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === "}") return i;
  }
  return -1;
}

function unquote(text: string, template: string): string {
  const q = text[0]!;
  if (text.length < 2 || text[text.length - 1] !== q) throw parseError(template, `unterminated quoted string ${text}`);
  const inner = text.slice(1, -1);
  if (q === "'") return inner;
  try {
    return JSON.parse(`"${inner.replace(/\\'/g, "'")}"`) as string;
  } catch {
    throw parseError(template, `invalid quoted string ${text}`);
  }
}

const NAME_CHAR = /[^.[\]\s(){},=!<>@$"'|&]/;

function parsePath(text: string, template: string): Step[] {
  const steps: Step[] = [];
  let i = 0;
  if (text[0] === "$") {
    steps.push({ t: "root" });
    i = 1;
  } else if (text[0] === "@") i = 1;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === ".") {
      if (text[i + 1] === ".") {
        steps.push({ t: "recursive" });
        i += 2;
        if (text[i] === "[") continue;
      } else i++;
      if (text[i] === "*") {
        steps.push({ t: "wildcard" });
        i++;
        continue;
      }
      let name = "";
      while (i < text.length && (NAME_CHAR.test(text[i]!) || text[i] === "\\")) {
        if (text[i] === "\\") i++;
        name += text[i] ?? "";
        i++;
      }
      if (name !== "") steps.push({ t: "field", names: [name] });
    } else if (ch === "[") {
      const close = matchingBracket(text, i);
      if (close < 0) throw parseError(template, `unterminated array in ${text}`);
      steps.push(parseBracket(text.slice(i + 1, close).trim(), template));
      i = close + 1;
    } else if (/\s/.test(ch)) {
      throw parseError(template, `unexpected space in ${JSON.stringify(text)}`);
    } else {
      throw parseError(template, `unrecognized character ${JSON.stringify(ch)} in ${JSON.stringify(text)}`);
    }
  }
  return steps;
}

function matchingBracket(text: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === "\\") i++;
      else if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === "[") depth++;
    else if (ch === "]" && --depth === 0) return i;
  }
  return -1;
}

function parseBracket(inner: string, template: string): Step {
  if (inner === "*") return { t: "wildcard", listOnly: true };
  if (inner.startsWith("?(") && inner.endsWith(")")) return parseFilter(inner.slice(2, -1).trim(), template);
  const parts = inner.split(",").map((p) => p.trim());
  if (parts.every((p) => /^(['"]).*\1$/.test(p))) return { t: "field", names: parts.map((p) => unquote(p, template)) };
  const items = parts.map((p) => {
    if (/^-?\d+$/.test(p)) return Number(p);
    const m = /^(-?\d+)?:(-?\d+)?(?::(-?\d+)?)?$/.exec(p);
    if (!m) throw parseError(template, `invalid array index ${JSON.stringify(p)}`);
    const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
    return { start: num(m[1]), end: num(m[2]), step: num(m[3]) };
  });
  return { t: "index", items };
}

function parseFilter(expr: string, template: string): Step {
  const m = /^(.*?)\s*(==|!=|<=|>=|<|>|=~)\s*(.*)$/.exec(expr);
  if (!m) return { t: "filter", left: parsePath(expr, template) };
  return { t: "filter", left: parsePath(m[1]!.trim(), template), op: m[2]!, right: parseOperand(m[3]!.trim(), template) };
}

function parseOperand(text: string, template: string): Operand {
  if (/^(['"]).*\1$/.test(text)) return { t: "literal", value: unquote(text, template) };
  if (/^-?\d+(\.\d+)?$/.test(text)) return { t: "literal", value: Number(text) };
  if (text === "true" || text === "false") return { t: "literal", value: text === "true" };
  if (text === "nil" || text === "null") return { t: "literal", value: null };
  return { t: "path", steps: parsePath(text, template) };
}

// --- evaluation ---

const isObject = (v: Json): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

function evaluate(steps: readonly Step[], root: Json, current: Json, allowMissing: boolean): Json[] {
  let values: Json[] = [current];
  for (const step of steps) {
    const next: Json[] = [];
    // A union (`['a','b']`) yields every value's `a`, then every value's `b`, as kubectl orders them.
    const parts: Step[] = step.t === "field" && step.names.length > 1 ? step.names.map((n) => ({ t: "field", names: [n] })) : [step];
    for (const part of parts) for (const value of values) next.push(...applyStep(part, value, root, allowMissing));
    values = next;
  }
  return values;
}

function applyStep(step: Step, value: Json, root: Json, allowMissing: boolean): Json[] {
  switch (step.t) {
    case "root":
      return [root];
    case "field": {
      const out: Json[] = [];
      for (const name of step.names) {
        if (isObject(value) && Object.hasOwn(value, name)) out.push(value[name]);
        else if (!allowMissing) throw new Error(`${name} is not found`);
      }
      return out;
    }
    case "wildcard":
      if (Array.isArray(value)) return [...value];
      if (step.listOnly && value !== undefined && value !== null) throw new Error(`${describeType(value)} is not array or slice`);
      return isObject(value) ? Object.keys(value).sort().map((k) => value[k]) : [];
    case "recursive":
      return descendants(value);
    case "index":
      return indexItems(step.items, value, allowMissing);
    case "filter":
      return Array.isArray(value) ? value.filter((item) => matches(step, item, root)) : [];
  }
}

function describeType(value: Json): string {
  return isObject(value) ? "map[string]interface {}" : typeof value;
}

function descendants(value: Json): Json[] {
  const out: Json[] = [value];
  const children = Array.isArray(value) ? value : isObject(value) ? Object.keys(value).sort().map((k) => value[k]) : [];
  for (const child of children) out.push(...descendants(child));
  return out;
}

function indexItems(items: Extract<Step, { t: "index" }>["items"], value: Json, allowMissing: boolean): Json[] {
  if (!Array.isArray(value)) {
    if (!allowMissing) throw new Error(`cannot index a non-array value`);
    return [];
  }
  const out: Json[] = [];
  const len = value.length;
  for (const item of items) {
    if (typeof item === "number") {
      const at = item < 0 ? len + item : item;
      if (at >= 0 && at < len) out.push(value[at]);
      else if (!allowMissing) throw new Error(`array index out of bounds: index ${item}, length ${len}`);
      continue;
    }
    const clamp = (n: number) => Math.min(Math.max(n < 0 ? len + n : n, 0), len);
    const start = clamp(item.start ?? 0);
    const end = clamp(item.end ?? len);
    const step = item.step ?? 1;
    if (step <= 0) throw new Error(`step must be positive, got ${step}`);
    for (let i = start; i < end; i += step) out.push(value[i]);
  }
  return out;
}

function matches(filter: Extract<Step, { t: "filter" }>, item: Json, root: Json): boolean {
  const left = evaluate(filter.left, root, item, true);
  if (filter.op === undefined) return left.length > 0 && left[0] !== null && left[0] !== false;
  const right = filter.right!.t === "literal" ? [filter.right!.value] : evaluate(filter.right!.steps, root, item, true);
  if (left.length === 0 || right.length === 0) return false;
  const [a, b] = [left[0], right[0]];
  switch (filter.op) {
    case "==":
      return JSON.stringify(a) === JSON.stringify(b);
    case "!=":
      return JSON.stringify(a) !== JSON.stringify(b);
    case "=~":
      return typeof a === "string" && typeof b === "string" && new RegExp(b).test(a);
    default:
      return compare(a, b, filter.op!);
  }
}

function compare(a: Json, b: Json, op: string): boolean {
  if (!((typeof a === "number" && typeof b === "number") || (typeof a === "string" && typeof b === "string"))) return false;
  switch (op) {
    case "<":
      return a < b;
    case ">":
      return a > b;
    case "<=":
      return a <= b;
    default:
      return a >= b;
  }
}
