// Mapping of reasons, HTTP codes and socket errors to error codes, and the retry decision.
import { describe, expect, it } from "vitest";
import { mayRetry, retryDelayMs, retryPolicy } from "../../src/client/retry.js";
import { codeFor, connectionError, errorFromResponse, retryAfterSeconds } from "../../src/client/status-errors.js";
import { PlatformError } from "../../src/errors.js";

const ctx = { method: "GET", path: "/x" };
const sysError = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

describe("status and connection errors", () => {
  it.each([
    ["Expired", 410, "GONE"],
    ["Invalid", 422, "INVALID"],
    ["NotFound", 500, "NOT_FOUND"],
    [undefined, 413, "INPUT_TOO_LARGE"],
    [undefined, 507, "INTERNAL"],
    [undefined, 451, "BAD_REQUEST"],
  ])("maps reason %j with code %i to %s (the reason first)", (reason, http, code) => {
    expect(codeFor(reason, http)).toBe(code);
  });

  it("prefers the Status code over the HTTP code when the Status carries one", () => {
    const err = errorFromResponse(200, { kind: "Status", code: 410, reason: "Expired", message: "old" }, ctx);
    expect([err.code, err.httpStatus]).toEqual(["GONE", 410]);
  });

  it.each<[string, string | undefined, number | undefined]>([
    ["whole seconds", "12", 12],
    ["an HTTP date 30 s ahead", new Date(Date.UTC(2030, 0, 1, 0, 0, 30)).toUTCString(), 30],
    ["an HTTP date in the past", new Date(Date.UTC(2029, 0, 1)).toUTCString(), 0],
    ["garbage", "soon", undefined],
  ])("reads Retry-After given as %s", (_name, header, seconds) => {
    expect(retryAfterSeconds(header, undefined, Date.UTC(2030, 0, 1))).toBe(seconds);
  });

  it.each([
    ["ECONNREFUSED", "IO_ERROR", true, false],
    ["ECONNRESET", "IO_ERROR", true, true],
    ["ENOTFOUND", "IO_ERROR", false, false],
    ["CERT_HAS_EXPIRED", "TLS_VERIFY_FAILED", false, false],
    ["ERR_TLS_CERT_ALTNAME_INVALID", "TLS_VERIFY_FAILED", false, false],
  ])("maps socket error %s to %s (retryable %s, sent %s)", (code, expected, retryable, sent) => {
    const err = connectionError(sysError(code), "https://h:1", ctx);
    expect([err.code, err.retryable, err.details]).toEqual([expected, retryable, { connectionError: code, sent }]);
  });

  it.each([
    ["a refused connection, for any verb", connectionError(sysError("ECONNREFUSED"), "s", ctx), false, true],
    ["a reset connection of an idempotent call", connectionError(sysError("ECONNRESET"), "s", ctx), true, true],
    ["a reset connection of a create", connectionError(sysError("ECONNRESET"), "s", ctx), false, false],
    ["an unknown host", connectionError(sysError("ENOTFOUND"), "s", ctx), true, false],
    ["a 503 of an idempotent call", new PlatformError("STORAGE_UNAVAILABLE", "x"), true, true],
    ["a 409", new PlatformError("CONFLICT", "x"), true, false],
  ])("decides whether to retry %s", (_name, err, idempotent, expected) => {
    expect(mayRetry(err, idempotent)).toBe(expected);
  });

  it("does not retry a call that never reached the server when unreachable servers are not retried, and still retries the rest", () => {
    const refused = connectionError(sysError("ECONNREFUSED"), "s", ctx);
    const notFound = connectionError(sysError("ENOTFOUND"), "s", ctx);
    expect([mayRetry(refused, true, false), mayRetry(refused, false, false), mayRetry(notFound, true, false)]).toEqual([false, false, false]);
    expect(mayRetry(connectionError(sysError("ECONNRESET"), "s", ctx), true, false)).toBe(true);
    expect(mayRetry(new PlatformError("STORAGE_UNAVAILABLE", "x"), true, false)).toBe(true);
    expect(retryPolicy().unreachable).toBe(true);
  });

  it("caps a server's Retry-After at maxRetryAfterMs", () => {
    const err = new PlatformError("TOO_MANY_REQUESTS", "x", { details: { retryAfterSeconds: 3600 } });
    expect(retryDelayMs(1, err, retryPolicy({ maxRetryAfterMs: 30_000 }))).toBe(30_000);
  });

  it.each([
    [{ maxAttempts: 0 }, "expected `retry.maxAttempts` to be an integer 1–100, got 0"],
    [{ baseDelayMs: -1 }, "expected `retry.baseDelayMs` ≥ 0, got -1"],
  ])("refuses retry options %j", (options, message) => {
    expect(() => retryPolicy(options)).toThrow(message);
  });
});
