// RFC 6902 JSON Patch on top of fast-json-patch (validated), with errors that name the failing operation.
import jsonPatch from "fast-json-patch";
import type { Operation } from "fast-json-patch";
import { invalidOption, PlatformError } from "../../errors.js";
import { cloneJson, guardDepth, isJsonObject, patchInvalid } from "./json-value.js";

const { applyOperation, JsonPatchError, unescapePathComponent } = jsonPatch;

/** The same bound the upstream API server puts on one JSON patch. */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;

const OPS = new Set(["add", "remove", "replace", "move", "copy", "test"]);
const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

const REASONS: Readonly<Record<string, string>> = {
  OPERATION_NOT_AN_OBJECT: "an operation must be a JSON object",
  OPERATION_PATH_INVALID: "`path` must be a JSON pointer: empty or starting with /",
  OPERATION_FROM_REQUIRED: "`from` is required for move and copy",
  OPERATION_VALUE_REQUIRED: "`value` is required for add, replace and test",
  OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED: "`value` is required for add, replace and test",
  OPERATION_PATH_CANNOT_ADD: "the parent of the path does not exist",
  OPERATION_PATH_UNRESOLVABLE: "the path does not exist",
  OPERATION_FROM_UNRESOLVABLE: "the `from` path does not exist",
  OPERATION_PATH_ILLEGAL_ARRAY_INDEX: "an array index must be an unsigned base-10 integer",
  OPERATION_VALUE_OUT_OF_BOUNDS: "the array index is past the end of the array",
  TEST_OPERATION_FAILED: "test failed: the value at the path differs",
};

export interface JsonPatchOptions {
  /** Default MAX_JSON_PATCH_OPERATIONS. */
  readonly maxOperations?: number;
}

/**
 * Applies an RFC 6902 operation list to a copy of `doc`; neither argument is modified. Any failure is a
 * PATCH_INVALID naming the operation index, its op and path; a failed `test` aborts the whole patch.
 */
export function applyJsonPatch(doc: unknown, ops: unknown, options: JsonPatchOptions = {}): unknown {
  const max = options.maxOperations ?? MAX_JSON_PATCH_OPERATIONS;
  if (!Number.isSafeInteger(max) || max < 1) throw invalidOption("maxOperations", "to be a positive integer", max);
  if (!Array.isArray(ops)) throw patchInvalid("a JSON patch must be a JSON array of operations");
  if (ops.length > max) throw patchInvalid(`a JSON patch may hold at most ${max} operations, got ${ops.length}`);
  return guardDepth(() => {
    const operations = cloneJson(ops) as unknown[];
    let document = cloneJson(doc);
    operations.forEach((op, index) => {
      try {
        checkOperation(op, document);
        document = applyOperation(document, op as Operation, true, true, true, index).newDocument;
      } catch (e) {
        throw describe(e, op, index);
      }
    });
    return document;
  });
}

/** RFC rules fast-json-patch does not enforce: only the six ops, no leading zeros in array indices, no move into oneself; and no prototype keys. */
function checkOperation(op: unknown, document: unknown): void {
  if (!isJsonObject(op)) throw new JsonPatchError("", "OPERATION_NOT_AN_OBJECT");
  if (typeof op.op !== "string" || !OPS.has(op.op)) throw new Error("`op` must be one of add, remove, replace, move, copy, test");
  if (typeof op.path === "string") checkPointer(document, op.path, op.op === "add");
  if (typeof op.from === "string" && (op.op === "move" || op.op === "copy")) {
    checkPointer(document, op.from, false);
    if (op.op === "move" && op.path !== op.from && typeof op.path === "string" && op.path.startsWith(`${op.from}/`)) {
      throw new Error("cannot move a value into one of its own children");
    }
  }
}

function checkPointer(document: unknown, pointer: string, allowAppend: boolean): void {
  if (pointer === "" || !pointer.startsWith("/")) return;
  const tokens = pointer.slice(1).split("/");
  let node: unknown = document;
  for (const [i, raw] of tokens.entries()) {
    const token = unescapePathComponent(raw);
    if (token === "__proto__" || (token === "prototype" && tokens[i - 1] === "constructor")) {
      throw new Error("changing `__proto__` or `constructor/prototype` is not allowed");
    }
    if (node === undefined) continue;
    if (Array.isArray(node)) {
      const last = i === tokens.length - 1;
      if (!ARRAY_INDEX.test(token) && !(last && allowAppend && token === "-")) {
        throw new JsonPatchError("", "OPERATION_PATH_ILLEGAL_ARRAY_INDEX");
      }
      node = node[Number(token)];
    } else {
      node = isJsonObject(node) && Object.hasOwn(node, token) ? node[token] : undefined;
    }
  }
}

function describe(e: unknown, op: unknown, index: number): PlatformError {
  if (e instanceof PlatformError) return e;
  const o = isJsonObject(op) ? op : {};
  const path = typeof o.path === "string" ? o.path : "";
  const reason = e instanceof JsonPatchError ? (REASONS[e.name] ?? e.message) : e instanceof Error ? e.message : String(e);
  const opName = typeof o.op === "string" ? o.op : "?";
  return patchInvalid(`JSON patch operation ${index} (${opName} ${JSON.stringify(path)}): ${reason}`, path || undefined);
}
