// Static credential files: CSV `token,user,uid,"group1,group2"` (the basic-auth file has a password first), checked in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { UserInfo } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import { addGroups, frozenUser, SYSTEM_AUTHENTICATED, type AuthnResult } from "./identity.js";
import { tokenKey } from "./token-cache.js";

/** One line of a credential file: the secret (token or password) and the user it stands for. */
export interface CredentialEntry {
  readonly secret: string;
  readonly user: UserInfo;
  /** 1-based line number, for messages. */
  readonly line: number;
}

/** Splits one CSV line (RFC 4180 quoting, `""` inside quotes); throws a message on a stray or unterminated quote. */
export function splitCsvLine(text: string): string[] {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error("a quoted field is not terminated");
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
      if (i < text.length && text[i] !== ",") throw new Error(`unexpected character after a closing quote at column ${i + 1}`);
    } else {
      const end = text.indexOf(",", i);
      field = text.slice(i, end < 0 ? text.length : end);
      if (field.includes('"')) throw new Error(`a quote inside an unquoted field at column ${i + field.indexOf('"') + 1}`);
      i = end < 0 ? text.length : end;
    }
    fields.push(field);
    if (i >= text.length) return fields;
    i++; // the comma
  }
}

/**
 * Parses a token file (`secretName` "token") or a basic-auth file ("password"): one `secret,user,uid[,"groups"]` per
 * line; blank lines and lines starting with `#` are skipped. Throws CONFIG_INVALID naming the line.
 */
export function parseCredentialFile(text: string, source = "token file", secretName = "token"): CredentialEntry[] {
  if (typeof text !== "string") throw new PlatformError("CONFIG_INVALID", `${source}: expected text, got ${typeof text}`);
  const entries: CredentialEntry[] = [];
  const seen = new Map<string, number>();
  const lines = text.replace(/^\uFEFF/, "").split("\n");
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n]!.replace(/\r$/, "");
    if (raw.trim() === "" || raw.trimStart().startsWith("#")) continue;
    const at = `${source} line ${n + 1}`;
    let fields: string[];
    try {
      fields = splitCsvLine(raw);
    } catch (err) {
      throw new PlatformError("CONFIG_INVALID", `${at}: ${(err as Error).message}`);
    }
    if (fields.length < 3 || fields.length > 4) {
      throw new PlatformError("CONFIG_INVALID", `${at}: expected 3 or 4 columns (${secretName}, user name, uid, optional "group1,group2"), found ${fields.length}`);
    }
    const [secret, username, uid, groupList] = fields.map((f) => f.trim()) as [string, string, string, string | undefined];
    if (secret === "") throw new PlatformError("CONFIG_INVALID", `${at}: the ${secretName} is empty`);
    if (username === "") throw new PlatformError("CONFIG_INVALID", `${at}: the user name is empty`);
    const key = secretName === "token" ? secret : username;
    const first = seen.get(key);
    if (first !== undefined) {
      throw new PlatformError("CONFIG_INVALID", `${at}: duplicate ${secretName === "token" ? "token" : "user name"}, first given on line ${first}`);
    }
    seen.set(key, n + 1);
    const groups = (groupList ?? "").split(",").map((g) => g.trim()).filter((g) => g !== "");
    const user: UserInfo = { username, ...(uid !== "" && { uid }), groups };
    entries.push({ secret, user, line: n + 1 });
  }
  return entries;
}

/** Reads and parses a credential file; IO_ERROR when unreadable, CONFIG_INVALID naming the line when malformed. */
export async function loadCredentialFile(path: string, secretName = "token"): Promise<CredentialEntry[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read ${secretName} file ${path}: ${(err as Error).message}`, { cause: err });
  }
  return parseCredentialFile(text, `${secretName} file ${path}`, secretName);
}

/** A password's SHA-256: fixed-length, so a constant-time comparison tells nothing of its length. */
const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/** The user as every request with this credential gets it: authenticated, and one frozen object shared by them all. */
function authenticatedUser(user: UserInfo): UserInfo {
  return frozenUser({ ...user, groups: addGroups(user.groups, SYSTEM_AUTHENTICATED) });
}

/** Bearer tokens from a token file. Every entry is compared (fixed-length digests), so timing tells nothing. */
export class TokenFileAuthenticator {
  /**
   * Users by the SHA-256 of their token (the first line wins for a repeated token). One lookup per request, however
   * many nodes the file lists; keyed by digest, so lookup timing says nothing about the tokens themselves.
   */
  readonly #byDigest = new Map<string, UserInfo>();

  constructor(entries: readonly CredentialEntry[]) {
    for (const e of entries) {
      const key = tokenKey(e.secret);
      if (!this.#byDigest.has(key)) this.#byDigest.set(key, authenticatedUser(e.user));
    }
  }

  /**
   * The token's user, or undefined when the file does not hold it (another authenticator may). `key`: the token's
   * `tokenKey`, when the caller has it already.
   */
  authenticateToken(token: string, key = tokenKey(token)): AuthnResult | undefined {
    const found = this.#byDigest.get(key);
    return found ? { user: found } : undefined;
  }
}

/** Basic credentials from a basic-auth file (`password,user,uid,"groups"`). */
export class BasicAuthFileAuthenticator {
  readonly #byUser: ReadonlyMap<string, { readonly digest: Buffer; readonly user: UserInfo }>;
  readonly #dummy = digest("");

  constructor(entries: readonly CredentialEntry[]) {
    this.#byUser = new Map(entries.map((e) => [e.user.username, { digest: digest(e.secret), user: authenticatedUser(e.user) }]));
  }

  authenticate(username: string, password: string): AuthnResult {
    const entry = this.#byUser.get(username);
    // An unknown user still costs one comparison, so a wrong name and a wrong password look alike.
    const ok = timingSafeEqual(entry?.digest ?? this.#dummy, digest(password)) && entry !== undefined;
    return ok ? { user: entry.user } : { error: "invalid username or password" };
  }
}
