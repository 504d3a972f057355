import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, PlatformError, invalidOption, toPlatformError } from "../src/errors.js";

const doc = readFileSync(new URL("../docs/errors.md", import.meta.url), "utf8");
const rows = new Map(
  [...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (\w+) \| (yes|no) \|/gm)].map((m) => [m[1]!, { http: Number(m[2]), reason: m[3]!, retryable: m[4] === "yes" }]),
);

describe("error codes", () => {
  it("docs/errors.md lists exactly the codes of src/errors.ts", () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });
  it.each(Object.entries(ERROR_CODES))("documents %s with its status, reason and retryability", (code, info) => {
    expect(rows.get(code)).toEqual({ http: info.http, reason: info.reason, retryable: info.retryable });
  });
  it("carries code, status and retryability on the error", () => {
    const e = new PlatformError("CONFLICT", "changed");
    expect([e.code, e.httpStatus, e.reason, e.retryable]).toEqual(["CONFLICT", 409, "Conflict", false]);
  });
  it("formats option errors in the one message shape", () => {
    expect(invalidOption("expirationSeconds", "≥ 600", 300).message).toBe("expected `expirationSeconds` ≥ 600, got 300");
  });
  it("wraps foreign errors without losing typed ones", () => {
    const typed = new PlatformError("GONE", "old");
    expect(toPlatformError(typed)).toBe(typed);
    expect(toPlatformError(new Error("x")).code).toBe("INTERNAL");
  });
});
