// The opaque `continue` token of paginated lists: the snapshot revision and the last key returned, bound to one collection.
import { PlatformError } from "../../errors.js";

export interface ContinueToken {
  /** Storage revision the first page was read at; later pages read the same snapshot. */
  readonly revision: number;
  /** Last key handed out; the next page starts strictly after it. */
  readonly startAfter: string;
}

interface Wire {
  v: 1;
  rv: number;
  start: string;
}

export function encodeContinue(token: ContinueToken, prefix: string): string {
  const wire: Wire = { v: 1, rv: token.revision, start: token.startAfter.slice(prefix.length) };
  return Buffer.from(JSON.stringify(wire)).toString("base64url");
}

/** Decodes a token for the collection under `prefix`; anything else is a 400. */
export function decodeContinue(text: string, prefix: string): ContinueToken {
  const bad = (why: string) => new PlatformError("BAD_REQUEST", `invalid continue token: ${why}`);
  if (!/^[A-Za-z0-9_=+/-]+$/.test(text)) throw bad("not base64");
  let wire: unknown;
  try {
    wire = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    throw bad("not a token issued by this server");
  }
  const w = wire as Partial<Wire> | null;
  if (!w || typeof w !== "object" || w.v !== 1 || !Number.isSafeInteger(w.rv) || (w.rv as number) < 1 || typeof w.start !== "string") {
    throw bad("not a token issued by this server");
  }
  // The key is stored relative to the collection, so a token can never start a read outside it.
  if (w.start === "") throw bad("no start key");
  return { revision: w.rv as number, startAfter: prefix + w.start };
}
