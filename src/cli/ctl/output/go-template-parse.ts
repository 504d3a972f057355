// Parses the documented subset of Go text/template used by `-o go-template`: actions, pipelines, if/range/with/else/end.
import { PlatformError } from "../../../errors.js";

export type Term =
  | { readonly t: "dot"; readonly fields: readonly string[] }
  | { readonly t: "var"; readonly name: string; readonly fields: readonly string[] }
  | { readonly t: "literal"; readonly value: unknown }
  | { readonly t: "ident"; readonly name: string }
  | { readonly t: "sub"; readonly pipe: Pipeline; readonly fields: readonly string[] };

export interface Command {
  readonly args: readonly Term[];
}

export interface Pipeline {
  /** Variables declared (`$x :=`, `$i, $e :=`) or assigned (`$x =`) by the pipeline. */
  readonly decl: readonly string[];
  readonly assign: boolean;
  readonly commands: readonly Command[];
}

export type TemplateNode =
  | { readonly t: "text"; readonly text: string }
  | { readonly t: "action"; readonly pipe: Pipeline }
  | { readonly t: "if" | "with" | "range"; readonly pipe: Pipeline; readonly body: TemplateNode[]; readonly otherwise: TemplateNode[] };

export function templateError(message: string): PlatformError {
  return new PlatformError("INVALID_OPTION", `error parsing template: ${message}`);
}

interface RawAction {
  readonly text: string;
  readonly line: number;
}

/** Splits the template into text and `{{…}}` actions, honouring `{{-`/`-}}` trimming and dropping comments. */
function scan(source: string): (string | RawAction)[] {
  const out: (string | RawAction)[] = [];
  let i = 0;
  let trimNext = false;
  while (i <= source.length) {
    const open = source.indexOf("{{", i);
    let text = source.slice(i, open < 0 ? source.length : open);
    if (trimNext) text = text.replace(/^\s+/, "");
    if (open < 0) {
      if (text) out.push(text);
      break;
    }
    const trimLeft = /^\{\{-\s/.test(source.slice(open, open + 4));
    if (trimLeft) text = text.replace(/\s+$/, "");
    if (text) out.push(text);
    const start = open + (trimLeft ? 3 : 2);
    const close = findActionEnd(source, start);
    if (close < 0) throw templateError(`unclosed action at line ${lineOf(source, open)}`);
    const trimRight = source[close - 1] === "-" && /\s/.test(source[close - 2] ?? "");
    const body = source.slice(start, trimRight ? close - 1 : close).trim();
    trimNext = trimRight;
    i = close + 2;
    if (body.startsWith("/*")) {
      if (!body.endsWith("*/")) throw templateError(`unclosed comment at line ${lineOf(source, open)}`);
      continue;
    }
    out.push({ text: body, line: lineOf(source, open) });
  }
  return out;
}

const lineOf = (s: string, at: number): number => s.slice(0, at).split("\n").length;

function findActionEnd(s: string, from: number): number {
  let quote: string | undefined;
  for (let i = from; i < s.length - 1; i++) {
    const ch = s[i]!;
    if (quote) {
      if (ch === "\\" && quote !== "`") i++;
      else if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "`" || ch === "'") quote = ch;
    else if (ch === "}" && s[i + 1] === "}") return i;
  }
  return -1;
}

/** Parses a whole template into nodes. */
export function parseGoTemplate(source: string): TemplateNode[] {
  const items = scan(source);
  let pos = 0;
  const parseList = (inBlock: boolean): { nodes: TemplateNode[]; end: "end" | "else" | "else-if" | "eof"; elseIf?: RawAction } => {
    const nodes: TemplateNode[] = [];
    while (pos < items.length) {
      const item = items[pos++]!;
      if (typeof item === "string") {
        nodes.push({ t: "text", text: item });
        continue;
      }
      const [word, rest] = splitKeyword(item.text);
      if (word === "end") {
        if (!inBlock) throw templateError(`unexpected {{end}} at line ${item.line}`);
        return { nodes, end: "end" };
      }
      if (word === "else") {
        if (!inBlock) throw templateError(`unexpected {{else}} at line ${item.line}`);
        if (/^if\s/.test(rest)) return { nodes, end: "else-if", elseIf: { text: rest, line: item.line } };
        return { nodes, end: "else" };
      }
      if (word === "if" || word === "with" || word === "range") nodes.push(parseBlock(word, rest, item.line));
      else if (word === "define" || word === "template" || word === "block") {
        throw templateError(`{{${word}}} is not supported (line ${item.line})`);
      } else nodes.push({ t: "action", pipe: parsePipeline(item.text, item.line) });
    }
    if (inBlock) throw templateError("unexpected end of template: missing {{end}}");
    return { nodes, end: "eof" };
  };
  const parseBlock = (word: "if" | "with" | "range", rest: string, line: number): TemplateNode => {
    if (rest === "") throw templateError(`missing value for ${word} at line ${line}`);
    const pipe = parsePipeline(rest, line);
    const body = parseList(true);
    let otherwise: TemplateNode[] = [];
    if (body.end === "else") {
      const tail = parseList(true);
      if (tail.end !== "end") throw templateError(`expected {{end}} after {{else}} at line ${line}`);
      otherwise = tail.nodes;
    } else if (body.end === "else-if") {
      const [, cond] = splitKeyword(body.elseIf!.text);
      // `{{else if x}}…{{end}}` is an if nested in the else branch, sharing the one {{end}}.
      otherwise = [parseBlock("if", cond, body.elseIf!.line)];
    }
    return { t: word, pipe, body: body.nodes, otherwise };
  };
  const { nodes } = parseList(false);
  return nodes;
}

function splitKeyword(text: string): [string, string] {
  const m = /^([a-z]+)(?:\s+([\s\S]*))?$/.exec(text);
  return m ? [m[1]!, (m[2] ?? "").trim()] : ["", text];
}

// --- pipelines ---

type Token = ({ k: "field" | "var" | "ident" | "punct"; v: string } | { k: "lit"; v: unknown }) & { s: number; e: number };

function tokenize(text: string, line: number): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const push = (k: Token["k"], v: unknown, length: number) => {
    tokens.push({ k, v, s: i, e: i + length } as Token);
    i += length;
  };
  while (i < text.length) {
    const ch = text[i]!;
    const rest = text.slice(i);
    let m: RegExpExecArray | null;
    if (/\s/.test(ch)) i++;
    else if (rest.startsWith(":=")) push("punct", ":=", 2);
    else if ("()|=,".includes(ch)) push("punct", ch, 1);
    else if ((m = /^\.[A-Za-z0-9_]*/.exec(rest))) push("field", m[0], m[0].length);
    else if ((m = /^\$[A-Za-z0-9_]*/.exec(rest))) push("var", m[0], m[0].length);
    else if ((m = /^"(?:[^"\\]|\\.)*"/.exec(rest))) push("lit", JSON.parse(m[0]) as string, m[0].length);
    else if ((m = /^`[^`]*`/.exec(rest))) push("lit", m[0].slice(1, -1), m[0].length);
    else if ((m = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(rest))) push("lit", Number(m[0]), m[0].length);
    else if ((m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest))) {
      const word = m[0];
      if (word === "true" || word === "false") push("lit", word === "true", word.length);
      else if (word === "nil") push("lit", null, word.length);
      else push("ident", word, word.length);
    } else throw templateError(`unexpected ${JSON.stringify(ch)} at line ${line} in {{${text}}}`);
  }
  return tokens;
}

function parsePipeline(text: string, line: number): Pipeline {
  const tokens = tokenize(text, line);
  let pos = 0;
  const fail = (why: string) => templateError(`${why} at line ${line} in {{${text}}}`);
  const peek = () => tokens[pos];

  const fieldsAfter = (): string[] => {
    const fields: string[] = [];
    // Only a field written right after the term continues it: `.a.b` is one chain, `.a .b` two arguments.
    while (peek()?.k === "field" && peek()!.v !== "." && peek()!.s === tokens[pos - 1]!.e) fields.push((tokens[pos++]!.v as string).slice(1));
    return fields;
  };
  const term = (): Term => {
    const tok = tokens[pos++];
    if (!tok) throw fail("missing value");
    switch (tok.k) {
      case "field": {
        const fields = tok.v === "." ? [] : [(tok.v as string).slice(1), ...fieldsAfter()];
        return { t: "dot", fields };
      }
      case "var":
        return { t: "var", name: tok.v as string, fields: fieldsAfter() };
      case "lit":
        return { t: "literal", value: tok.v };
      case "ident":
        return { t: "ident", name: tok.v as string };
      case "punct": {
        if (tok.v !== "(") throw fail(`unexpected ${JSON.stringify(tok.v)}`);
        const pipe = pipeline(true);
        if (tokens[pos++]?.v !== ")") throw fail("unclosed left paren");
        return { t: "sub", pipe, fields: fieldsAfter() };
      }
    }
  };
  const pipeline = (nested: boolean): Pipeline => {
    const decl: string[] = [];
    let assign = false;
    const save = pos;
    while (peek()?.k === "var") {
      decl.push(tokens[pos++]!.v as string);
      if (peek()?.v === ",") pos++;
      else break;
    }
    if (decl.length > 0 && (peek()?.v === ":=" || peek()?.v === "=")) {
      assign = tokens[pos++]!.v === "=";
    } else {
      decl.length = 0;
      pos = save;
    }
    const commands: Command[] = [];
    let args: Term[] = [];
    while (pos < tokens.length) {
      const tok = peek()!;
      if (tok.v === ")" && tok.k === "punct") {
        if (!nested) throw fail("unexpected right paren");
        break;
      }
      if (tok.v === "|" && tok.k === "punct") {
        if (args.length === 0) throw fail("missing command before |");
        commands.push({ args });
        args = [];
        pos++;
        continue;
      }
      args.push(term());
    }
    if (args.length === 0) throw fail(commands.length === 0 ? "missing value" : "missing command after |");
    commands.push({ args });
    return { decl, assign, commands };
  };
  const result = pipeline(false);
  if (pos < tokens.length) throw fail(`unexpected ${JSON.stringify(tokens[pos]!.v)}`);
  return result;
}
