import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatGoDuration, parseGoDuration } from "../../src/config/duration.js";

const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe("parseGoDuration", () => {
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
  ])("reads %s", (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each(["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "1 s", "1S", "5s ", "1h-5m", "9223372036855s"])("refuses %j", (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});

describe("formatGoDuration", () => {
  it.each([
    [0, "0s"],
    [0.000001, "1ns"],
    [0.0011, "1.1µs"],
    [2.2, "2.2ms"],
    [3.3 * S, "3.3s"],
    [4 * M + 5 * S, "4m5s"],
    [4 * M + 5001, "4m5.001s"],
    [5 * H + 6 * M + 7001, "5h6m7.001s"],
    [M, "1m0s"],
    [15 * S, "15s"],
    [8760 * H, "8760h0m0s"],
    [-0.000001, "-1ns"],
  ])("writes %s ms as %s", (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
  });

  it("round-trips whole milliseconds through its own output", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e12, max: 1e12 }), (ms) => parseGoDuration(formatGoDuration(ms)) === ms),
      { numRuns: 500 },
    );
  });
});
