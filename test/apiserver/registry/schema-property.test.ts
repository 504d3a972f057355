// Properties tying the field schema to its checkers: what the schema generates passes, a wrong type anywhere is refused at its path.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { inspectFields, kindSchema, schemaRegistry, type SchemaNode } from "../../../src/api/schema.js";
import { typeErrors } from "../../../src/apiserver/registry/type-check.js";
import { ctx, definition } from "../resources/fixtures.js";

const KINDS = schemaRegistry().kinds().map((k) => k.kind);
/** Kinds served with a strategy (Status and DeleteOptions are messages, not resources). */
const WITH_STRATEGY = KINDS.filter((k) => k !== "Status" && k !== "DeleteOptions" && k !== "TokenRequest");

const key = fc.stringMatching(/^[a-z][a-z0-9.]{0,6}$/);
const time = fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }).map((d) => d.toISOString());

/** Values the schema allows at `node` (written here, not taken from the checker, so the two can disagree). */
function arbitrary(node: SchemaNode): fc.Arbitrary<unknown> {
  switch (node.type) {
    case "any":
      return fc.jsonValue({ maxDepth: 2 });
    case "boolean":
      return fc.boolean();
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "integer":
      return node.format === "int32" ? fc.integer() : fc.maxSafeInteger();
    case "string":
      return node.format === "date-time" ? time : node.format === "byte" ? fc.base64String({ maxLength: 12 }) : fc.string({ maxLength: 8 });
    case "map":
      return fc.dictionary(key, arbitrary(node.values), { maxKeys: 2 });
    case "list":
      return fc.array(arbitrary(node.items), { maxLength: 2 });
    case "object": {
      const fields = Object.fromEntries(Object.entries(node.fields).map(([name, child]) => [name, arbitrary(child)]));
      return fc.record(fields, { requiredKeys: [...node.required] });
    }
  }
}

type Step = string | number;
interface Site {
  readonly steps: Step[];
  readonly path: string;
  readonly node: SchemaNode;
}

/** Every value in `value` with its schema node and its path as field errors print it; nothing below `any`. */
function sites(value: unknown, node: SchemaNode, steps: Step[] = [], path = ""): Site[] {
  if (node.type === "any" || value === null || value === undefined) return [];
  const here: Site[] = steps.length > 0 ? [{ steps, path, node }] : [];
  if (node.type === "object") {
    const obj = value as Record<string, unknown>;
    return [...here, ...Object.keys(obj).flatMap((k) => sites(obj[k], node.fields[k]!, [...steps, k], path ? `${path}.${k}` : k))];
  }
  if (node.type === "map") {
    const obj = value as Record<string, unknown>;
    return [...here, ...Object.keys(obj).flatMap((k) => sites(obj[k], node.values, [...steps, k], `${path}[${k}]`))];
  }
  if (node.type === "list") return [...here, ...(value as unknown[]).flatMap((item, i) => sites(item, node.items, [...steps, i], `${path}[${i}]`))];
  return here;
}

/** A JSON value that is never of `node`'s type. */
function wrongValue(node: SchemaNode): unknown {
  switch (node.type) {
    case "string":
      return 7;
    case "list":
      return { a: "b" };
    case "object":
    case "map":
      return ["x"];
    default:
      return "7";
  }
}

function replaced(value: unknown, steps: Step[], by: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let at = copy;
  for (const step of steps.slice(0, -1)) at = at[step] as Record<string | number, unknown>;
  at[steps.at(-1)!] = by;
  return copy;
}

/** A generated object of `kind` and one of its sites (none when the object has no field to break). */
const caseOf = (kind: string) =>
  arbitrary(kindSchema(kind)).chain((value) => {
    const all = sites(value, kindSchema(kind));
    return fc.record({ value: fc.constant(value), site: all.length > 0 ? fc.constantFrom(...all) : fc.constant(undefined) });
  });

describe("the field schema and its checkers", () => {
  it.each(KINDS)("accepts every %s the schema describes", (kind) => {
    const root = kindSchema(kind);
    fc.assert(
      fc.property(arbitrary(root), (value) => {
        expect(typeErrors(value, root)).toEqual([]);
        expect(inspectFields(value, root)).toEqual({ unknown: [], wrongType: [] });
      }),
      { numRuns: 60 },
    );
  });

  it.each(KINDS)("refuses a wrong type anywhere in a %s, naming its path", (kind) => {
    const root = kindSchema(kind);
    fc.assert(
      fc.property(caseOf(kind), ({ value, site }) => {
        if (site === undefined) return;
        const broken = replaced(value, site.steps, wrongValue(site.node));
        expect(typeErrors(broken, root)).toContainEqual(expect.objectContaining({ field: site.path, reason: "FieldValueTypeInvalid" }));
        expect(inspectFields(broken, root).wrongType.map((m) => m.path)).toContain(site.path);
      }),
      { numRuns: 60 },
    );
  });

  it.each(WITH_STRATEGY)("has the %s strategy refuse a wrong type in the kind's own fields with a Status cause at its path", (kind) => {
    const def = definition(kind);
    fc.assert(
      fc.property(caseOf(kind), ({ value, site }) => {
        if (site === undefined || ["apiVersion", "kind", "metadata"].includes(site.steps[0] as string)) return;
        const broken = replaced(value, site.steps, wrongValue(site.node)) as Record<string, unknown>;
        const errors = def.strategy.validate({ ...broken, metadata: { name: "x" } } as never, ctx());
        expect(errors).toContainEqual(expect.objectContaining({ field: site.path, reason: "FieldValueTypeInvalid", message: expect.stringContaining("must be of type") }));
      }),
      { numRuns: 40 },
    );
  });
});
