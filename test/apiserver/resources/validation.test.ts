import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PlatformError } from "../../../src/errors.js";
import { formatMicroTime } from "../../../src/api/meta.js";
import {
  configKeyProblem, decodeBase64, duplicate, errorsFromCauses, forbidden, formatTime, invalid, isRfc3339, notSupported, required, tooLong,
} from "../../../src/apiserver/registry/validation.js";
import { summary } from "./fixtures.js";

describe("field error builders", () => {
  it.each([
    ["required", required("spec.a"), "FieldValueRequired", "Required value"],
    ["required with detail", required("spec.a", "give one"), "FieldValueRequired", "Required value: give one"],
    ["invalid", invalid("spec.a", "x", "is bad"), "FieldValueInvalid", 'Invalid value: "x": is bad'],
    ["forbidden", forbidden("spec.a", "not here"), "FieldValueForbidden", "Forbidden: not here"],
    ["duplicate", duplicate("spec.a[1]", "x"), "FieldValueDuplicate", 'Duplicate value: "x"'],
    ["not supported", notSupported("spec.a", "c", ["a", "b"]), "FieldValueNotSupported", 'Unsupported value: "c": supported values: "a", "b"'],
    ["too long", tooLong("note", 1024), "FieldValueTooLong", "Too long: may not be more than 1024 bytes"],
  ])("builds %s errors with upstream's message shape", (_, error, reason, message) => {
    expect(error).toMatchObject({ reason, message });
  });

  it("cuts long values in messages", () => {
    expect(invalid("a", "x".repeat(500), "bad").message.length).toBeLessThan(200);
  });

  it.each([
    ["each cause of a PlatformError, with its reason", new PlatformError("BUNDLE_INVALID", "bad", { causes: [{ message: "one" }, { message: "two", reason: "FieldValueDuplicate" }] }), ["f FieldValueInvalid", "f FieldValueDuplicate"]],
    ["the message of a PlatformError without causes", new PlatformError("CSR_INVALID", "bad version"), ["f FieldValueInvalid"]],
    ["anything else thrown", new TypeError("boom"), ["f FieldValueInvalid"]],
  ])("turns %s into field errors", (_, err, expected) => {
    const errors = errorsFromCauses("f", "<data>", err);
    expect(summary(errors)).toEqual(expected);
    expect(errors.every((e) => e.message.startsWith('Invalid value: "<data>": '))).toBe(true);
  });
});

describe("data keys, base64 and times", () => {
  it.each(["a", "tls.crt", "a-b_c.d", ".hidden", "x".repeat(253)])("accepts the data key %s", (k) => {
    expect(configKeyProblem(k)).toBeUndefined();
  });

  it.each([".", "..", "..a", "a/b", "a b", "", "x".repeat(254)])("refuses the data key %j", (k) => {
    expect(configKeyProblem(k)).toBeDefined();
  });

  it.each([
    ["padded base64", "aGVsbG8=", "hello"],
    ["base64 with line breaks", "aGVs\nbG8=", "hello"],
    ["empty text", "", ""],
  ])("decodes %s", (_, encoded, decoded) => {
    expect(decodeBase64(encoded)?.toString()).toBe(decoded);
  });

  it.each(["aGVsbG8", "aGVs bG8=", "a===", "URL_safe-", "====", "aG=s", "aGVsbG8=\u0000"])("refuses the base64 text %j", (encoded) => {
    expect(decodeBase64(encoded)).toBeUndefined();
  });

  it("accepts exactly the texts of standard padded base64 (one pattern per quantum, as written out in RFC 4648)", () => {
    const quanta = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
    const text = fc.string({ unit: fc.constantFrom(..."ABab09+/=\n-_ ".split("")), maxLength: 24 });
    const encoded = fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString("base64"));
    fc.assert(
      fc.property(fc.oneof(text, encoded), (t) => {
        const compact = t.replace(/[\r\n]/g, "");
        const got = decodeBase64(t);
        expect(got !== undefined).toBe(quanta.test(compact));
        if (got) expect(got).toEqual(Buffer.from(compact, "base64"));
      }),
      { numRuns: 3000 },
    );
  });

  it.each(["2030-01-02T03:04:05Z", "2030-01-02T03:04:05.123456Z", "2030-01-02T03:04:05+05:30"])("accepts the time %s", (t) => {
    expect(isRfc3339(t)).toBe(true);
  });

  it.each(["2030-01-02", "2030-01-02 03:04:05Z", "2030-13-02T03:04:05Z", "now"])("refuses the time %s", (t) => {
    expect(isRfc3339(t)).toBe(false);
  });

  it("answers a time the same however often it is asked, past the memory of recent times filling up", () => {
    const good = Array.from({ length: 600 }, (_, i) => new Date(Date.UTC(2030, 0, 1, 0, 0, i)).toISOString().replace(".000", ""));
    const bad = good.map((t) => t.replace("2030-01-01", "2030-02-30"));
    for (let round = 0; round < 3; round++) {
      for (const t of good) expect(isRfc3339(t)).toBe(true);
      for (const t of bad) expect(isRfc3339(t)).toBe(false);
    }
  });

  it("writes Time with seconds and MicroTime with microseconds", () => {
    const at = new Date("2030-01-02T03:04:05.678Z");
    expect(formatTime(at)).toBe("2030-01-02T03:04:05Z");
    expect(formatMicroTime(at)).toBe("2030-01-02T03:04:05.678000Z");
  });
});
