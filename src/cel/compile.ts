// Compiling a CEL expression once (parse, type check, refusals) and evaluating it under a cost and time limit.
import { performance } from "node:perf_hooks";
import { Optional, type ASTNode } from "@marcbachmann/cel-js";
import { PlatformError } from "../errors.js";
import { celEnvironment, linearRegexProblem, UNAVAILABLE_VARIABLES, type CelVariableSet } from "./library.js";

/** What an expression must produce: checked at compile time where the type is known, at evaluation where it is `dyn`. */
export type CelResult = "bool" | "string" | "string or list of strings";

const ACCEPTED_TYPES: Record<CelResult, readonly string[]> = {
  bool: ["bool", "dyn"],
  string: ["string", "dyn"],
  "string or list of strings": ["string", "list<string>", "list", "dyn", "list<dyn>"],
};

/** Longest expression accepted, in characters. */
export const MAX_EXPRESSION_LENGTH = 10_000;

export interface CelLimits {
  /** Cost units one evaluation may spend: 1 per evaluated node plus 1 per 10 characters or items it produces. */
  readonly cost: number;
  /** Wall-clock milliseconds one evaluation may take. */
  readonly timeMs: number;
}

/** As upstream's per-call limit (1,000,000); the time limit stops what the cost units do not price. */
export const DEFAULT_CEL_LIMITS: CelLimits = { cost: 1_000_000, timeMs: 100 };

/** Where compile errors point: "line 1, column 7" from a 0-based offset. */
function position(expression: string, offset: number | undefined): string {
  if (offset === undefined || offset < 0) return "";
  const before = expression.slice(0, offset).split("\n");
  return ` at line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

interface LibError {
  readonly summary?: string;
  readonly message?: string;
  readonly range?: { readonly start: number };
}

/** Thrown by `compileCel`: the message is "<why> at line L, column C" (the caller adds the field and the expression). */
export function celCompileError(expression: string, why: string, offset?: number): PlatformError {
  return new PlatformError("CEL_INVALID", `${why}${position(expression, offset)}`, { details: { offset } });
}

export interface CelProgram {
  readonly expression: string;
  /** The claims (or the user) the expression names by field, e.g. `email` for `claims.email` or `claims["email"]`. */
  readonly fieldsOf: (variable: string) => ReadonlySet<string>;
  /** The value (a string, boolean, list or plain object); CEL_EVALUATION when it fails, exceeds a limit or has the wrong type. */
  evaluate(variables: Record<string, unknown>): unknown;
}

/** Every AST node reachable from the root (macros keep their expanded nodes in their metadata). */
function nodes(root: ASTNode): ASTNode[] {
  const out: ASTNode[] = [];
  const seen = new Set<unknown>();
  const visit = (v: unknown): void => {
    if (v === null || typeof v !== "object" || seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) return v.forEach(visit);
    const isNode = typeof (v as ASTNode).op === "string" && "args" in v;
    if (isNode) {
      out.push(v as ASTNode);
      visit((v as ASTNode).args);
      visit((v as unknown as { meta?: unknown }).meta);
    } else if (Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach(visit);
    else for (const key of ["args", "macro", "alternate", "step", "init", "iterable", "condition", "result"]) visit((v as Record<string, unknown>)[key]);
  };
  visit(root);
  return out;
}

let budget = 0;
let deadline = 0;
let ticks = 0;

function charge(units: number): void {
  budget -= units;
  if (budget < 0) throw new PlatformError("CEL_EVALUATION", "the expression exceeded its cost limit");
  if ((++ticks & 255) === 0 && performance.now() > deadline) throw new PlatformError("CEL_EVALUATION", "the expression exceeded its time limit");
}

const sizeCost = (v: unknown): number => (typeof v === "string" || Array.isArray(v) ? Math.floor(v.length / 10) : 0);

/** Counts every node evaluation against the current budget (evaluation is synchronous: one budget at a time). */
function meter(node: ASTNode): void {
  type Evaluate = (ev: unknown, ast: unknown, ctx: unknown) => unknown;
  type Metered = { evaluate: Evaluate; meta: { alternate?: Metered; macro?: { evaluate: Evaluate }; evaluate: Evaluate } };
  const target = node as unknown as Metered;
  target.evaluate = (ev, ast, ctx) => {
    charge(1);
    const m = target.meta;
    const out = m.alternate ? m.alternate.evaluate(ev, m.alternate, ctx) : m.macro ? m.macro.evaluate(ev, m.macro, ctx) : m.evaluate(ev, ast, ctx);
    charge(sizeCost(out));
    return out;
  };
}

/** A JSON value as CEL sees it, as upstream decodes claims: whole numbers are ints, other numbers doubles. */
export function celValue(v: unknown): unknown {
  if (typeof v === "number") return Number.isSafeInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(celValue);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, celValue(x)]));
  return v;
}

/** JS values of CEL results: ints as numbers, maps as plain objects, optionals unwrapped. */
export function plainCel(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (v instanceof Optional) return v.hasValue() ? plainCel(v.value()) : null;
  if (Array.isArray(v)) return v.map(plainCel);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), plainCel(x)]));
  return v;
}

function resultProblem(result: CelResult, v: unknown): string | undefined {
  if (result === "bool" && typeof v !== "boolean") return `must produce a boolean, produced ${typeof v}`;
  if (result === "string" && typeof v !== "string" && v !== null) return `must produce a string, produced ${typeof v}`;
  if (result === "string or list of strings" && !(v === null || typeof v === "string" || (Array.isArray(v) && v.every((x) => typeof x === "string")))) return "must produce a string or a list of strings";
  return undefined;
}

/**
 * Parses and type-checks `expression` once against the variables of `set`; CEL_INVALID with the position when it does
 * not compile, names an unknown variable or field, cannot produce `result`, or uses a regex the linear engine cannot run.
 */
export function compileCel(expression: string, set: CelVariableSet, result: CelResult, limits: CelLimits = DEFAULT_CEL_LIMITS): CelProgram {
  if (typeof expression !== "string" || expression.trim() === "") throw celCompileError(String(expression), "an expression is required");
  if (expression.length > MAX_EXPRESSION_LENGTH) throw celCompileError("", `the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
  const env = celEnvironment(set);
  let parsed: ReturnType<typeof env.parse>;
  try {
    parsed = env.parse(expression);
  } catch (err) {
    const e = err as LibError;
    throw celCompileError(expression, `syntax error: ${e.summary ?? e.message ?? String(err)}`, e.range?.start);
  }
  const unavailable = UNAVAILABLE_VARIABLES[set] ?? {};
  for (const node of nodes(parsed.ast)) {
    if (node.op === "id" && typeof node.args === "string" && Object.hasOwn(unavailable, node.args)) throw celCompileError(expression, unavailable[node.args]!, node.start);
  }
  const checked = parsed.check();
  if (!checked.valid) {
    const e = checked.error as LibError;
    throw celCompileError(expression, `type error: ${e.summary ?? firstLine(e.message ?? "")}`, e.range?.start);
  }
  if (!ACCEPTED_TYPES[result].includes(checked.type ?? "")) throw celCompileError(expression, `the expression must produce a ${result}, it produces ${checked.type}`);
  const all = nodes(parsed.ast);
  for (const node of all) {
    if (node.op !== "rcall" || (node.args as unknown[])[0] !== "matches") continue;
    const pattern = ((node.args as unknown[])[2] as ASTNode[])[0];
    if (pattern?.op !== "value" || typeof pattern.args !== "string") throw celCompileError(expression, "the pattern of matches() must be a string literal", node.start);
    const why = linearRegexProblem(pattern.args);
    if (why) throw celCompileError(expression, `the pattern of matches() is not supported (backreferences and lookaround are not): ${why}`, pattern.start);
  }
  const fields = fieldIndex(all);
  all.forEach(meter);
  return {
    expression,
    fieldsOf: (variable) => fields.get(variable) ?? new Set(),
    evaluate(variables) {
      budget = limits.cost;
      deadline = performance.now() + limits.timeMs;
      ticks = 0;
      let value: unknown;
      try {
        value = plainCel(parsed(variables));
      } catch (err) {
        if (err instanceof PlatformError) throw err;
        throw new PlatformError("CEL_EVALUATION", `evaluation failed: ${firstLine((err as Error)?.message ?? String(err))}`, { cause: err });
      }
      const problem = resultProblem(result, value);
      if (problem) throw new PlatformError("CEL_EVALUATION", `the expression ${problem}`);
      return value;
    },
  };
}

const firstLine = (s: string): string => s.split("\n")[0]!.trim();

/** variable → the fields selected on it directly (`v.f`, `v.?f`, `v["f"]`, `has(v.f)`). */
function fieldIndex(all: readonly ASTNode[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const node of all) {
    if (!Array.isArray(node.args)) continue;
    const [left, right] = node.args as [ASTNode | undefined, unknown];
    if (left?.op !== "id" || typeof left.args !== "string") continue;
    let field: unknown;
    if (node.op === "." || node.op === ".?") field = right;
    else if ((node.op === "[]" || node.op === "[?]") && (right as ASTNode)?.op === "value") field = (right as ASTNode).args;
    if (typeof field !== "string") continue;
    if (!out.has(left.args)) out.set(left.args, new Set());
    out.get(left.args)!.add(field);
  }
  return out;
}


/**
 * A boolean condition over JSON variables (webhook matchConditions): compiled now (CEL_INVALID with the position),
 * evaluated with each variable converted as `celValue` does; CEL_EVALUATION when it fails or exceeds a limit.
 */
export function compileCondition(expression: string, set: CelVariableSet, limits: CelLimits = DEFAULT_CEL_LIMITS): (variables: Readonly<Record<string, unknown>>) => boolean {
  const program = compileCel(expression, set, "bool", limits);
  return (variables) => program.evaluate(Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, celValue(v)]))) === true;
}

/**
 * Upstream's matchConditions rule: any false → false (even when another failed to evaluate); else the first
 * evaluation error (named by `label`) for the caller's failure policy; else true.
 */
export function conditionsHold<C>(conditions: readonly C[], holds: (c: C) => boolean, label: (c: C) => string): boolean | { readonly error: string } {
  let error: string | undefined;
  for (const c of conditions) {
    try {
      if (!holds(c)) return false;
    } catch (err) {
      error ??= `match condition ${label(c)} failed: ${(err as Error).message}`;
    }
  }
  return error === undefined ? true : { error };
}
