// Parses kubectl's JSONPath templates into text, actions and range/end blocks, each action a list of path steps.
import { PlatformError } from "../../../errors.js";

export type Json = unknown;

/** One step of a path: applied to every current value, it yields the next values. */
export type Step =
  | { readonly t: "root" }
  | { readonly t: "field"; readonly names: readonly string[] }
  | { readonly t: "recursive" }
  /** `.*` (a map's values or a list's items) or `[*]` (a list's items only, as kubectl allows). */
  | { readonly t: "wildcard"; readonly listOnly?: boolean }
  | { readonly t: "index"; readonly items: readonly (number | { start?: number; end?: number; step?: number })[] }
  | { readonly t: "filter"; readonly left: readonly Step[]; readonly op?: string; readonly right?: Operand };

type Operand = { readonly t: "path"; readonly steps: readonly Step[] } | { readonly t: "literal"; readonly value: Json };

export type Node =
  | { readonly t: "text"; readonly text: string }
  | { readonly t: "expr"; readonly steps: readonly Step[] }
  | { readonly t: "range"; readonly steps: readonly Step[]; readonly body: readonly Node[] };

const parseError = (template: string, why: string): PlatformError =>
  new PlatformError("INVALID_OPTION", `error parsing jsonpath ${template}: ${why}`);

export function parseTemplate(template: string): Node[] {
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
