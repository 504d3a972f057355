// Static token and basic-auth files: CSV parsing with line-numbered errors, lookups, and the file loader.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  BasicAuthFileAuthenticator,
  loadCredentialFile,
  parseCredentialFile,
  splitCsvLine,
  TokenFileAuthenticator,
} from "../../../src/apiserver/auth/authn-token-file.js";
import { isPlatformError, PlatformError } from "../../../src/errors.js";
import { tempDir } from "../../fixtures/temp-dir.js";

function parseError(text: string, secret = "token"): PlatformError {
  try {
    parseCredentialFile(text, "token file", secret);
  } catch (err) {
    if (err instanceof PlatformError) return err;
    throw err;
  }
  throw new Error("expected a parse error");
}

describe("splitCsvLine", () => {
  it.each([
    ["plain fields", "a,b,c", ["a", "b", "c"]],
    ["a quoted field holding commas", 'a,b,c,"g1,g2"', ["a", "b", "c", "g1,g2"]],
    ["a doubled quote inside quotes", '"x""y",b', ['x"y', "b"]],
    ["an empty last field", "a,b,", ["a", "b", ""]],
  ])("splits %s", (_name, line, fields) => {
    expect(splitCsvLine(line)).toEqual(fields);
  });

  it.each([
    ["an unterminated quote", 'a,"bc', /not terminated/],
    ["a quote inside an unquoted field", 'a,b"c', /column 4/],
    ["text after a closing quote", '"a"b,c', /after a closing quote at column 4/],
  ])("refuses %s", (_name, line, message) => {
    expect(() => splitCsvLine(line)).toThrow(message);
  });
});

describe("parseCredentialFile", () => {
  it("reads users, uids and groups, skipping blank and comment lines", () => {
    const text = '\uFEFF# static tokens\r\ntok-1,alice,uid-1,"admins, ops"\r\n\r\ntok-2,bob,,\ntok-3,carol,uid-3\n';
    expect(parseCredentialFile(text)).toEqual([
      { secret: "tok-1", user: { username: "alice", uid: "uid-1", groups: ["admins", "ops"] }, line: 2 },
      { secret: "tok-2", user: { username: "bob", groups: [] }, line: 4 },
      { secret: "tok-3", user: { username: "carol", uid: "uid-3", groups: [] }, line: 5 },
    ]);
  });

  it.each([
    ["too few columns", "t1,alice,u1\nt2,bob\n", "token file line 2: expected 3 or 4 columns (token, user name, uid, optional \"group1,group2\"), found 2"],
    ["too many columns", "t1,alice,u1,g,extra\n", "token file line 1: expected 3 or 4 columns (token, user name, uid, optional \"group1,group2\"), found 5"],
    ["an empty token", "\n\n,alice,u1\n", "token file line 3: the token is empty"],
    ["an empty user name", "t1, ,u1\n", "token file line 1: the user name is empty"],
    ["a duplicate token", "t1,alice,u1\n# c\nt1,bob,u2\n", "token file line 3: duplicate token, first given on line 1"],
    ["a broken quote", 't1,alice,u1,"admins\n', "token file line 1: a quoted field is not terminated"],
  ])("refuses %s with the line number", (_name, text, message) => {
    const err = parseError(text);
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toBe(message);
  });

  it("names the password and refuses a repeated user in a basic-auth file", () => {
    expect(parseError(",alice,u1\n", "password").message).toBe("token file line 1: the password is empty");
    expect(parseError("p1,alice,u1\np2,alice,u2\n", "password").message).toBe("token file line 2: duplicate user name, first given on line 1");
  });
});

describe("loadCredentialFile", () => {
  const dir = tempDir();

  it("reads a file and names it in errors", async () => {
    const path = join(dir, "tokens.csv");
    writeFileSync(path, "t1,alice,u1\nbroken\n");
    await expect(loadCredentialFile(path)).rejects.toThrow(`token file ${path} line 2: expected 3 or 4 columns`);
  });

  it("answers IO_ERROR for a file it cannot read", async () => {
    const err = await loadCredentialFile(join(dir, "missing.csv")).catch((e: unknown) => e);
    expect(isPlatformError(err, "IO_ERROR")).toBe(true);
  });
});

describe("TokenFileAuthenticator", () => {
  const a = new TokenFileAuthenticator(parseCredentialFile('tok-1,alice,uid-1,"admins"\ntok-2,bob,uid-2\n'));

  it.each([
    ["the first token", "tok-1", { user: { username: "alice", uid: "uid-1", groups: ["admins", "system:authenticated"] } }],
    ["the second token", "tok-2", { user: { username: "bob", uid: "uid-2", groups: ["system:authenticated"] } }],
    ["an unknown token", "tok-3", undefined],
    ["a prefix of a token", "tok-", undefined],
    ["a token with a trailing space", "tok-1 ", undefined],
  ])("answers %s", (_name, token, expected) => {
    expect(a.authenticateToken(token)).toEqual(expected);
  });
});

describe("BasicAuthFileAuthenticator", () => {
  const a = new BasicAuthFileAuthenticator(parseCredentialFile('s3cret,alice,uid-1,"admins"\n', "basic-auth file", "password"));

  it.each([
    ["the right password", "alice", "s3cret", { user: { username: "alice", uid: "uid-1", groups: ["admins", "system:authenticated"] } }],
    ["a wrong password", "alice", "guess", { error: "invalid username or password" }],
    ["an unknown user", "mallory", "s3cret", { error: "invalid username or password" }],
    ["an unknown user with an empty password", "mallory", "", { error: "invalid username or password" }],
  ])("answers %s", (_name, username, password, expected) => {
    expect(a.authenticate(username, password)).toEqual(expected);
  });
});
