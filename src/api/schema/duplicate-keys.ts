// Duplicate JSON object keys, found in the raw request text because JSON.parse silently keeps the last one.
import { PlatformError } from "../../errors.js";

interface ObjectFrame {
  readonly kind: "object";
  readonly path: string;
  readonly keys: Set<string>;
}

interface ArrayFrame {
  readonly kind: "array";
  readonly path: string;
  index: number;
}

const WS = /[ \t\n\r]*/y;
const LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;

/**
 * Paths of keys that occur more than once in one object (`metadata.name`, `spec.containers[0].image`), in
 * text order. Scans iteratively, so nesting depth is not limited by the call stack. Text that is not JSON
 * gets a BAD_REQUEST naming the offset.
 *
 * `decoded`, when given, must be what JSON.parse made of `jsonText`: if it holds as many keys as the text has
 * quotes followed by a colon, no key repeats and the scan (most of this check's cost) is skipped.
 */
export function findDuplicateKeys(jsonText: string, decoded?: unknown): string[] {
  if (decoded !== undefined && keyCount(decoded) === keyEndsAtLeast(jsonText)) return [];
  const scanner = new Scanner(jsonText);
  const duplicates: string[] = [];
  const stack: (ObjectFrame | ArrayFrame)[] = [];
  let path = "";
  for (;;) {
    // A value starts here.
    const c = scanner.peek();
    if (c === "{" || c === "[") {
      scanner.pos++;
      const closer = c === "{" ? "}" : "]";
      if (scanner.peek() !== closer) {
        if (c === "{") {
          const frame: ObjectFrame = { kind: "object", path, keys: new Set() };
          stack.push(frame);
          path = readKey(scanner, frame, duplicates);
        } else {
          stack.push({ kind: "array", path, index: 0 });
          path = `${path}[0]`;
        }
        continue;
      }
      scanner.pos++;
    } else if (c === '"') {
      scanner.skipString();
    } else {
      scanner.readLiteral();
    }
    // A value ended: close finished containers, then move to the next sibling (or stop at the top).
    for (;;) {
      const top = stack[stack.length - 1];
      if (top === undefined) {
        scanner.expectEnd();
        return duplicates;
      }
      const next = scanner.peek();
      if (next === ",") {
        scanner.pos++;
        if (top.kind === "object") path = readKey(scanner, top, duplicates);
        else path = `${top.path}[${++top.index}]`;
        break;
      }
      scanner.expect(top.kind === "object" ? "}" : "]");
      stack.pop();
    }
  }
}

/**
 * Quotes followed (after blanks) by a colon: every key ends so, and a string value only when it holds an escaped
 * quote before a colon. So this is at least the number of keys in the text, and equal to the decoded value's key
 * count only when no key repeats (JSON.parse keeps one of each) and no value fools it.
 */
function keyEndsAtLeast(text: string): number {
  let n = 0;
  for (let q = text.indexOf('"'); q >= 0; q = text.indexOf('"', q + 1)) {
    let i = q + 1;
    let c = text.charCodeAt(i);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++i);
    if (c === 0x3a) n++;
  }
  return n;
}

/** Own keys of every object in a decoded JSON value; iterative, as deep as JSON.parse goes. */
function keyCount(value: unknown): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== "object" || v === null) continue;
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
      continue;
    }
    for (const key of Object.keys(v)) {
      n++;
      stack.push((v as Record<string, unknown>)[key]);
    }
  }
  return n;
}

function readKey(scanner: Scanner, frame: ObjectFrame, duplicates: string[]): string {
  if (scanner.peek() !== '"') scanner.fail("expected an object key");
  const key = scanner.readString();
  const path = frame.path === "" ? key : `${frame.path}.${key}`;
  if (frame.keys.has(key)) duplicates.push(path);
  else frame.keys.add(key);
  scanner.expect(":");
  return path;
}

class Scanner {
  pos = 0;
  constructor(private readonly text: string) {}

  /** The next non-blank character (empty at the end). */
  peek(): string {
    WS.lastIndex = this.pos;
    WS.test(this.text);
    this.pos = WS.lastIndex;
    return this.text.charAt(this.pos);
  }

  expect(c: string): void {
    if (this.peek() !== c) this.fail(`expected ${JSON.stringify(c)}`);
    this.pos++;
  }

  expectEnd(): void {
    if (this.peek() !== "") this.fail("unexpected text after the JSON value");
  }

  /** Moves past a string value; its text is not needed (JSON.parse checks the escapes). */
  skipString(): void {
    const text = this.text;
    let quote = this.pos;
    for (;;) {
      quote = text.indexOf('"', quote + 1);
      if (quote < 0) this.fail("unterminated string");
      // The quote closes the string unless an odd number of backslashes precedes it.
      let slashes = 0;
      while (text.charCodeAt(quote - 1 - slashes) === 0x5c) slashes++;
      if (slashes % 2 === 0) break;
    }
    this.pos = quote + 1;
  }

  readString(): string {
    const start = this.pos;
    let i = start + 1;
    let escaped = false;
    for (; i < this.text.length; i++) {
      const ch = this.text.charCodeAt(i);
      if (ch === 0x5c) {
        escaped = true;
        i++;
      } else if (ch === 0x22) {
        break;
      }
    }
    if (i >= this.text.length) this.fail("unterminated string");
    this.pos = i + 1;
    const raw = this.text.slice(start, i + 1);
    if (!escaped) return raw.slice(1, -1);
    try {
      return JSON.parse(raw) as string;
    } catch {
      return this.fail("invalid string escape");
    }
  }

  readLiteral(): void {
    LITERAL.lastIndex = this.pos;
    if (!LITERAL.test(this.text)) this.fail("expected a JSON value");
    this.pos = LITERAL.lastIndex;
  }

  fail(what: string): never {
    throw new PlatformError("BAD_REQUEST", `invalid JSON at offset ${this.pos}: ${what}`);
  }
}
