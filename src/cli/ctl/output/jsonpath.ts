// kubectl's JSONPath templates (`-o jsonpath=…`): text with {…} actions, fields, [*], slices, unions, filters, range/end.
import { PlatformError } from "../../../errors.js";
import { evaluate } from "./jsonpath-evaluate.js";
import { parseTemplate, type Json, type Node } from "./jsonpath-parse.js";
import { sortKeys } from "./sort-keys.js";

export interface JsonPathOptions {
  /** Missing fields and out-of-range indexes yield nothing instead of an error (kubectl default: true). */
  readonly allowMissingKeys?: boolean;
  /** `jsonpath-as-json`: every result in one indented JSON array. */
  readonly asJson?: boolean;
}

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
    this.#executing(() => run(this.#nodes, data));
    return text;
  }

  /**
   * The values of each action of the template, without printing them (kubectl's FindResults): what custom columns
   * print and --sort-by compares. Missing fields yield no values.
   */
  results(data: Json): Json[][] {
    const out: Json[][] = [];
    this.#executing(() => {
      for (const node of this.#nodes) if (node.t === "expr") out.push(evaluate(node.steps, data, data, true));
    });
    return out;
  }

  /** Runs an evaluation; an evaluator's own failure becomes INVALID_ARGUMENT naming the template, as kubectl's message. */
  #executing(evaluation: () => void): void {
    try {
      evaluation();
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      throw new PlatformError("INVALID_ARGUMENT", `error executing jsonpath ${JSON.stringify(this.template)}: ${(err as Error).message}`);
    }
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
