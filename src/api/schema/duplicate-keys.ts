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
 */
export function findDuplicateKeys(jsonText: string): string[] {
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
