// The one duration syntax: Go durations plus days and whole seconds, its shortest rendering, and fuzzing of both.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DURATION_SYNTAX, formatDuration, formatDurationSeconds, parseDuration, parseDurationSeconds } from "../../src/fields/duration.js";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe("parseDuration", () => {
  it.each([
    ["0", 0],
    ["-0", 0],
    ["5s", 5 * S],
    ["30s", 30 * S],
    ["1478s", 1478 * S],
    ["-5s", -5 * S],
    ["+5s", 5 * S],
    ["5.0s", 5 * S],
    ["5.6s", 5.6 * S],
    ["5.s", 5 * S],
    [".5s", 0.5 * S],
    ["1.004s", 1004],
    ["13ms", 13],
    ["11us", 0.011],
    ["12\u00b5s", 0.012],
    ["12\u03bcs", 0.012],
    ["10ns", 0.00001],
    ["15m", 15 * M],
    ["16h", 16 * H],
    ["1m0s", M],
    ["3h30m", 3.5 * H],
    ["10.5s4m", 4 * M + 10.5 * S],
    ["-2m3.4s", -(2 * M + 3.4 * S)],
    ["12h0m0s", 12 * H],
    ["8760h", 8760 * H],
    ["1.5h", 1.5 * H],
    // The forms signer policies and flags accepted before there was one syntax: days and whole seconds.
    ["1d", D],
    ["90d", 90 * D],
    ["1d1h30m15s", D + H + 30 * M + 15 * S],
    ["1.5d", 36 * H],
    ["3", 3 * S],
    ["600", 600 * S],
    ["-60", -60 * S],
  ])("reads %s", (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([
    ["whole seconds as a number", 3600, 3600 * S],
    ["zero as a number", 0, 0],
    ["a negative number", -60, -60 * S],
  ])("reads %s", (_, value, ms) => {
    expect(parseDuration(value)).toBe(ms);
  });

  it.each(["", "-", "s", ".", "-.", ".s", "+.s", "1 s", "1S", "5s ", " 5s", "1h-5m", "2w", "h", "1.5", "9223372036855s", "106752d", "99999999999999999999d"])(
    "refuses %j",
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );

  it.each([["a fraction", 1.5], ["a boolean", true], ["null", null], ["a list", ["1s"]], ["an unsafe integer", 2 ** 60], ["NaN", Number.NaN]])("refuses %s", (_, value) => {
    expect(parseDuration(value)).toBeUndefined();
  });

  it("reads exactly, as Go's integer arithmetic does", () => {
    expect(parseDuration("5.001s")).toBe(5001);
    expect(parseDuration("2562047h47m16.854775807s")).toBe(9_223_372_036_854.775);
    expect(parseDuration("1.9ns")).toBe(0.000001);
  });
});

describe("parseDurationSeconds", () => {
  it.each([
    ["whole seconds as a number", 3600, 3600],
    ["whole seconds as text", "600", 600],
    ["minutes", "90m", 5400],
    ["hours", "24h", 86_400],
    ["days", "90d", 7_776_000],
    ["several parts", "1d1h30m15s", 91_815],
    ["a fraction of an hour", "1.5h", 5400],
    ["milliseconds that make whole seconds", "1500ms1.5s", 3],
  ])("reads %s", (_, input, seconds) => {
    expect(parseDurationSeconds(input)).toBe(seconds);
  });

  it.each([
    ["a fraction", 1.5],
    ["a fraction of a second", "1.5s"],
    ["zero", "0s"],
    ["a negative number", -60],
    ["a negative duration", "-1h"],
    ["a unit it does not know", "2w"],
    ["spaces", "1 h"],
    ["a unit without number", "h"],
    ["a boolean", true],
    ["a number beyond safe integers", "99999999999999999999d"],
  ])("refuses %s", (_, input) => {
    expect(parseDurationSeconds(input)).toBeUndefined();
  });
});

describe("formatDuration", () => {
  it.each([
    [0, "0s"],
    [0.000001, "1ns"],
    [0.0011, "1.1µs"],
    [2.2, "2.2ms"],
    [3.3 * S, "3.3s"],
    [4 * M + 5 * S, "4m5s"],
    [4 * M + 5001, "4m5.001s"],
    [5 * H + 6 * M + 7001, "5h6m7.001s"],
    [M, "1m"],
    [15 * S, "15s"],
    [8760 * H, "365d"],
    [D + H, "1d1h"],
    [-0.000001, "-1ns"],
    [-(2 * M + 3.4 * S), "-2m3.4s"],
  ])("writes %s ms as %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    [90_000, "1d1h"],
    [5400, "1h30m"],
    [600, "10m"],
    [61, "1m1s"],
    [0, "0s"],
  ])("writes %i seconds as %s", (seconds, text) => {
    expect(formatDurationSeconds(seconds)).toBe(text);
    if (seconds > 0) expect(parseDurationSeconds(text)).toBe(seconds);
  });
});

/** Strings in the syntax: an optional sign, then number+unit parts with whole, fractional or bare-fraction numbers. */
const durationText = fc
  .tuple(
    fc.constantFrom("", "-", "+"),
    fc.array(
      fc.tuple(
        fc.oneof(fc.nat({ max: 5000 }).map(String), fc.tuple(fc.nat({ max: 999 }), fc.stringMatching(/^\d{0,9}$/)).map(([w, f]) => `${w}.${f}`)),
        fc.constantFrom("ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h", "d"),
      ),
      { minLength: 1, maxLength: 4 },
    ),
  )
  .map(([sign, parts]) => sign + parts.map(([n, u]) => n + u).join(""));

describe("the duration syntax under fuzzing", () => {
  it("reads every string in the syntax, and its rendering reads back to the same value", () => {
    fc.assert(
      fc.property(durationText, (text) => {
        const ms = parseDuration(text);
        expect(ms).toBeDefined();
        const again = parseDuration(formatDuration(ms!));
        // Renderings are exact to the nanosecond; the value is a float of milliseconds.
        expect(Math.abs(again! - ms!)).toBeLessThanOrEqual(Math.abs(ms!) * 1e-15 + 1e-6);
        expect(formatDuration(again!)).toBe(formatDuration(ms!));
      }),
      { numRuns: 1000 },
    );
  });

  it("round-trips whole milliseconds and whole seconds exactly", () => {
    fc.assert(fc.property(fc.integer({ min: -9e12, max: 9e12 }), (ms) => parseDuration(formatDuration(ms)) === ms), { numRuns: 1000 });
    fc.assert(fc.property(fc.integer({ min: 1, max: 9e9 }), (s) => parseDurationSeconds(formatDurationSeconds(s)) === s), { numRuns: 500 });
  });

  it("never throws on arbitrary input, and gives a number or undefined", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: fc.constantFrom(..."0123456789.-+nsuµμmhd ") }), fc.anything()), (value) => {
        const ms = parseDuration(value);
        expect(ms === undefined || Number.isFinite(ms)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("names the accepted forms in its syntax message", () => {
    for (const example of ["30s", "1h30m", "90d", "whole seconds"]) expect(DURATION_SYNTAX).toContain(example);
  });
});
