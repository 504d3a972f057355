// Policy lifetimes: whole seconds or number+unit parts, and their shortest rendering in messages.
import { describe, expect, it } from "vitest";
import { formatDuration, parseDurationSeconds } from "../../signers/duration.js";

describe("policy durations", () => {
  it.each([
    ["whole seconds as a number", 3600, 3600],
    ["whole seconds as text", "600", 600],
    ["minutes", "90m", 5400],
    ["hours", "24h", 86_400],
    ["days", "90d", 7_776_000],
    ["several parts", "1d1h30m15s", 91_815],
  ])("reads %s", (_, input, seconds) => {
    expect(parseDurationSeconds(input)).toBe(seconds);
  });

  it.each([
    ["a fraction", 1.5],
    ["zero", "0s"],
    ["a negative number", -60],
    ["a unit it does not know", "2w"],
    ["spaces", "1 h"],
    ["a unit without number", "h"],
    ["a boolean", true],
    ["a number beyond safe integers", "99999999999999999999d"],
  ])("refuses %s", (_, input) => {
    expect(parseDurationSeconds(input)).toBeUndefined();
  });

  it.each([
    [90_000, "1d1h"],
    [5400, "1h30m"],
    [600, "10m"],
    [61, "1m1s"],
    [0, "0s"],
  ])("renders %i seconds as %s", (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
    if (seconds > 0) expect(parseDurationSeconds(text)).toBe(seconds);
  });
});
