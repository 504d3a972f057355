// The one walk of a JSON value along a field schema, which every type check, unknown-field check and cleanup reads.
import type { ScalarNode, SchemaNode } from "./nodes.js";

export type JsonType = "string" | "number" | "boolean" | "object" | "list";

/** Where a visited value sits: the object or list holding it and its key there (none for the root). */
export type Parent = Record<string, unknown> | unknown[] | undefined;

/**
 * What a walk reports. Paths read `spec.usages[0]`, `data[tls.crt]` (map entries) and `""` for the root. Callbacks
 * may delete the visited entry from its parent.
 */
export interface FieldVisitor {
  /** A field the schema does not know (and no `preserveUnknown` object holds); nothing below it is walked. */
  unknown?(path: string, value: unknown, parent: Parent, key: string | number): void;
  /** A value of another JSON type than `node` wants (a fraction for an integer counts); nothing below it is walked. */
  mismatch?(path: string, value: unknown, node: SchemaNode, got: JsonType): void;
  /**
   * A scalar of the JSON type `node` wants; its format (range, time) is the visitor's to check. The path is asked
   * for only when needed (a problem to report): every scalar of every write is visited, few are wrong.
   */
  scalar?(path: () => string, value: string | number | boolean, node: ScalarNode): void;
  /** A null field, map entry or list item: absent for fields and entries, as decoding treats it. */
  null?(path: string, parent: Parent, key: string | number): void;
}

export function jsonType(value: unknown): JsonType {
  if (Array.isArray(value)) return "list";
  const t = typeof value;
  return t === "string" || t === "number" || t === "boolean" ? t : "object";
}

/** Walks `value` along `node`; nothing below an `any` node, an unknown field or a mismatch is visited. */
export function walkFields(value: unknown, node: SchemaNode, visitor: FieldVisitor, path = ""): void {
  new Walk(visitor, path).visit(value, node, undefined, "");
}

/** A field (`.name`), a map entry (`[key]`) or a list item (`[0]`) on the way down. */
const FIELD = 0;
const BRACKET = 1;

/**
 * One walk's position as a stack of keys, turned into a path string only when a callback needs one: building the
 * string of every field visited was most of what a walk allocated.
 */
class Walk {
  readonly #keys: (string | number)[] = [];
  readonly #kinds: number[] = [];
  readonly #path = (): string => this.path();

  constructor(
    private readonly v: FieldVisitor,
    private readonly root: string,
  ) {}

  path(): string {
    let out = this.root;
    for (let i = 0; i < this.#keys.length; i++) {
      const k = this.#keys[i]!;
      out = this.#kinds[i] === FIELD ? (out === "" ? String(k) : `${out}.${k}`) : `${out}[${k}]`;
    }
    return out;
  }

  #down(key: string | number, kind: number): void {
    this.#keys.push(key);
    this.#kinds.push(kind);
  }

  #up(): void {
    this.#keys.pop();
    this.#kinds.pop();
  }

  visit(value: unknown, node: SchemaNode, parent: Parent, key: string | number): void {
    const v = this.v;
    if (value === null) return v.null?.(this.path(), parent, key);
    if (node.type === "any") return;
    const got = jsonType(value);
    switch (node.type) {
      case "object": {
        if (got !== "object") return v.mismatch?.(this.path(), value, node, got);
        const obj = value as Record<string, unknown>;
        for (const k in obj) {
          if (!Object.hasOwn(obj, k)) continue;
          this.#down(k, FIELD);
          if (Object.hasOwn(node.fields, k)) this.visit(obj[k], node.fields[k]!, obj, k);
          else if (!node.preserveUnknown) v.unknown?.(this.path(), obj[k], obj, k);
          this.#up();
        }
        return;
      }
      case "map": {
        if (got !== "object") return v.mismatch?.(this.path(), value, node, got);
        const obj = value as Record<string, unknown>;
        for (const k in obj) {
          if (!Object.hasOwn(obj, k)) continue;
          this.#down(k, BRACKET);
          this.visit(obj[k], node.values, obj, k);
          this.#up();
        }
        return;
      }
      case "list": {
        if (got !== "list") return v.mismatch?.(this.path(), value, node, got);
        const list = value as unknown[];
        for (let i = 0; i < list.length; i++) {
          this.#down(i, BRACKET);
          this.visit(list[i], node.items, list, i);
          this.#up();
        }
        return;
      }
      case "integer":
        if (got !== "number" || !Number.isInteger(value)) return v.mismatch?.(this.path(), value, node, got);
        return v.scalar?.(this.#path, value as number, node);
      default:
        if (got !== node.type) return v.mismatch?.(this.path(), value, node, got);
        return v.scalar?.(this.#path, value as string | number | boolean, node);
    }
  }
}
