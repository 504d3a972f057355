// Runs the go-template subset on a decoded object: Go's printing of values, truth, missing keys, and kubectl's functions.
import { PlatformError } from "../../../errors.js";
import { parseGoTemplate, type Command, type Pipeline, type TemplateNode, type Term } from "./go-template-parse.js";
import { formatGo, sprintf } from "./go-format.js";

export interface GoTemplateOptions {
  /** Missing map keys print `<no value>` (kubectl default: true); false makes them an error. */
  readonly allowMissingKeys?: boolean;
}

/** Marks a value that does not exist (a missing key): Go's invalid reflect.Value. */
const NO_VALUE = Symbol("no value");
type Value = unknown;

type Scope = Map<string, Value>;

class ExecError extends Error {}

const isMap = (v: Value): v is Record<string, Value> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Go's truth: false, 0, "", nil, and empty maps and slices are false. */
export function truth(v: Value): boolean {
  if (v === NO_VALUE || v === null || v === undefined || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isMap(v)) return Object.keys(v).length > 0;
  return true;
}

const FUNCTIONS: Readonly<Record<string, (args: Value[], strict: boolean) => Value>> = {
  index(args) {
    let [item, ...keys] = args;
    for (const key of keys) {
      if (Array.isArray(item)) {
        if (typeof key !== "number" || !Number.isInteger(key)) throw new ExecError(`cannot index slice/array with ${formatGo(key)}`);
        if (key < 0 || key >= item.length) throw new ExecError(`index out of range: ${key}`);
        item = item[key];
      } else if (isMap(item)) {
        if (typeof key !== "string") throw new ExecError(`value has type ${typeof key}; should be string`);
        // As Go's index: a missing key is the zero value, whatever the missing-key option says.
        item = Object.hasOwn(item, key) ? item[key] : NO_VALUE;
      } else if (item === NO_VALUE || item === null) {
        throw new ExecError("index of untyped nil");
      } else throw new ExecError(`can't index item of type ${typeof item}`);
    }
    return item;
  },
  len([v]) {
    if (typeof v === "string") return Buffer.byteLength(v);
    if (Array.isArray(v)) return v.length;
    if (isMap(v)) return Object.keys(v).length;
    throw new ExecError(`len of ${v === NO_VALUE || v === null ? "nil" : `type ${typeof v}`}`);
  },
  printf: ([format, ...args]) => sprintf(typeof format === "string" ? format : formatGo(format), args),
  print: (args) => args.map((a, i) => (i > 0 && typeof a !== "string" && typeof args[i - 1] !== "string" ? " " : "") + formatGo(a)).join(""),
  println: (args) => `${args.map(formatGo).join(" ")}\n`,
  not: ([v]) => !truth(v),
  and: (args) => args.find((a) => !truth(a)) ?? args[args.length - 1],
  or: (args) => args.find((a) => truth(a)) ?? args[args.length - 1],
  eq: ([a, ...rest]) => rest.some((b) => JSON.stringify(a) === JSON.stringify(b)),
  ne: ([a, b]) => JSON.stringify(a) !== JSON.stringify(b),
  lt: ([a, b]) => ordered(a, b) < 0,
  le: ([a, b]) => ordered(a, b) <= 0,
  gt: ([a, b]) => ordered(a, b) > 0,
  ge: ([a, b]) => ordered(a, b) >= 0,
  base64decode([v]) {
    const text = String(v === NO_VALUE ? "" : v);
    // Go's StdEncoding: padded, nothing outside the alphabet.
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) throw new ExecError(`error calling base64decode: base64 decode failed: illegal base64 data in ${JSON.stringify(text.slice(0, 40))}`);
    return Buffer.from(text, "base64").toString("utf8");
  },
  /** kubectl's `exists item key...`: whether the path of keys or indexes leads somewhere. */
  exists([item, ...keys]) {
    let v = item;
    for (const key of keys) {
      if (Array.isArray(v) && typeof key === "number" && key >= 0 && key < v.length) v = v[key];
      else if (isMap(v) && typeof key === "string" && Object.hasOwn(v, key)) v = v[key];
      else return false;
    }
    return true;
  },
};

function ordered(a: Value, b: Value): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  throw new ExecError(`incompatible types for comparison: ${formatGo(a)} and ${formatGo(b)}`);
}

export const GO_TEMPLATE_FUNCTIONS: readonly string[] = Object.keys(FUNCTIONS);

/** A parsed template, reusable across objects. */
export class GoTemplate {
  readonly #nodes: TemplateNode[];

  constructor(readonly source: string) {
    this.#nodes = parseGoTemplate(source);
  }

  execute(data: Value, options: GoTemplateOptions = {}): string {
    const strict = options.allowMissingKeys === false;
    let out = "";
    const field = (receiver: Value, name: string): Value => {
      if (receiver === NO_VALUE || receiver === null || receiver === undefined) {
        if (strict) throw new ExecError(`nil data; no entry for key ${JSON.stringify(name)}`);
        return NO_VALUE;
      }
      if (!isMap(receiver)) throw new ExecError(`can't evaluate field ${name} in type ${Array.isArray(receiver) ? "[]interface {}" : typeof receiver}`);
      if (Object.hasOwn(receiver, name)) return receiver[name];
      if (strict) throw new ExecError(`map has no entry for key ${JSON.stringify(name)}`);
      return NO_VALUE;
    };
    const chain = (v: Value, fields: readonly string[]) => fields.reduce(field, v);
    const evalTerm = (term: Term, dot: Value, scope: Scope): Value => {
      switch (term.t) {
        case "dot":
          return chain(dot, term.fields);
        case "var":
          if (!scope.has(term.name)) throw new ExecError(`undefined variable: ${term.name}`);
          return chain(scope.get(term.name), term.fields);
        case "literal":
          return term.value;
        case "sub":
          return chain(evalPipe(term.pipe, dot, scope), term.fields);
        case "ident":
          return call(term.name, [], undefined);
      }
    };
    const call = (name: string, args: Value[], piped: Value | typeof NO_ARG): Value => {
      const fn = FUNCTIONS[name];
      if (!fn) throw new ExecError(`function ${JSON.stringify(name)} not defined`);
      return fn(piped === NO_ARG ? args : [...args, piped], strict);
    };
    const evalCommand = (cmd: Command, dot: Value, scope: Scope, piped: Value | typeof NO_ARG): Value => {
      const [first, ...rest] = cmd.args;
      if (first!.t === "ident") return call(first!.name, rest.map((a) => evalTerm(a, dot, scope)), piped);
      if (rest.length > 0 || piped !== NO_ARG) throw new ExecError(`can't give argument to non-function ${describe(first!)}`);
      return evalTerm(first!, dot, scope);
    };
    const evalPipe = (pipe: Pipeline, dot: Value, scope: Scope): Value => {
      let value: Value | typeof NO_ARG = NO_ARG;
      for (const cmd of pipe.commands) value = evalCommand(cmd, dot, scope, value);
      return value;
    };
    const declare = (pipe: Pipeline, value: Value, scope: Scope) => {
      for (const name of pipe.decl) {
        if (pipe.assign && !scope.has(name)) throw new ExecError(`undefined variable: ${name}`);
        scope.set(name, value);
      }
    };
    const run = (nodes: readonly TemplateNode[], dot: Value, outer: Scope): void => {
      const scope: Scope = new Map(outer);
      for (const node of nodes) {
        if (node.t === "text") out += node.text;
        else if (node.t === "action") {
          const value = evalPipe(node.pipe, dot, scope);
          if (node.pipe.decl.length > 0) declare(node.pipe, value, scope);
          else out += formatGo(value === NO_VALUE ? undefined : value);
        } else if (node.t === "if" || node.t === "with") {
          const value = evalPipe(node.pipe, dot, scope);
          const inner: Scope = new Map(scope);
          if (node.pipe.decl.length > 0) declare(node.pipe, value, inner);
          if (truth(value)) run(node.body, node.t === "with" ? value : dot, inner);
          else run(node.otherwise, dot, inner);
        } else {
          const value = evalPipe({ ...node.pipe, decl: [] }, dot, scope);
          const entries: [Value, Value][] = Array.isArray(value)
            ? value.map((v, i) => [i, v])
            : isMap(value)
              ? Object.keys(value).sort().map((k) => [k, value[k]])
              : [];
          if (!Array.isArray(value) && !isMap(value) && value !== NO_VALUE && value !== null) throw new ExecError(`range can't iterate over ${formatGo(value)}`);
          if (entries.length === 0) run(node.otherwise, dot, scope);
          for (const [key, item] of entries) {
            const inner: Scope = new Map(scope);
            const [a, b] = node.pipe.decl;
            if (b !== undefined) (inner.set(a!, key), inner.set(b, item));
            else if (a !== undefined) inner.set(a, item);
            run(node.body, item, inner);
          }
        }
      }
    };
    try {
      run(this.#nodes, data, new Map([["$", data]]));
    } catch (err) {
      if (err instanceof ExecError) throw new PlatformError("INVALID_ARGUMENT", `error executing template ${JSON.stringify(this.source)}: ${err.message}`);
      throw err;
    }
    return out;
  }
}

const NO_ARG = Symbol("no argument");

function describe(term: Term): string {
  switch (term.t) {
    case "dot":
      return `.${term.fields.join(".")}`;
    case "var":
      return [term.name, ...term.fields].join(".");
    case "literal":
      return formatGo(term.value);
    default:
      return "(…)";
  }
}
