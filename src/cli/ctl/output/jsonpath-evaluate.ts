// Evaluates parsed JSONPath steps over decoded objects: fields, wildcards, recursive descent, indexes and slices, filters.
import type { Json, Step } from "./jsonpath-parse.js";

const isObject = (v: Json): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

export function evaluate(steps: readonly Step[], root: Json, current: Json, allowMissing: boolean): Json[] {
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
