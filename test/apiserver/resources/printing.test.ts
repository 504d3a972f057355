import { describe, expect, it } from "vitest";
import { humanDuration, orNone, since, text } from "../../../src/apiserver/registry/resources/printing.js";

const m = 60;
const h = 3600;
const d = 24 * h;

describe("humanDuration", () => {
  it.each([
    [0, "0s"],
    [1, "1s"],
    [70, "70s"],
    [119, "119s"],
    [2 * m, "2m"],
    [190, "3m10s"],
    [10 * m, "10m"],
    [70 * m, "70m"],
    [179 * m, "179m"],
    [3 * h, "3h"],
    [3 * h + 30 * m, "3h30m"],
    [8 * h, "8h"],
    [47 * h, "47h"],
    [48 * h, "2d"],
    [49 * h, "2d1h"],
    [8 * d + 2 * h, "8d"],
    [367 * d, "367d"],
    [2 * 365 * d + 25 * h, "2y1d"],
    [8 * 365 * d + 2 * h, "8y"],
    [-1, "0s"],
    [-2, "<invalid>"],
  ])("shows %i seconds as %s, as upstream does", (seconds, expected) => {
    expect(humanDuration(seconds)).toBe(expected);
  });
});

describe("since and cell formatting", () => {
  const now = new Date("2030-01-02T03:04:05Z");

  it.each([
    ["a timestamp a minute and a half ago", "2030-01-02T03:02:35Z", "90s"],
    ["a timestamp with microseconds", "2030-01-02T03:04:00.123456Z", "4s"],
    ["no timestamp", undefined, "<unknown>"],
    ["an unreadable timestamp", "yesterday", "<unknown>"],
  ])("shows the age of %s", (_, timestamp, expected) => {
    expect(since(timestamp, now)).toBe(expected);
  });

  it.each([
    ["a string", "a", "a", "a"],
    ["an empty string", "", "", "<none>"],
    ["a number", 5, "", "<none>"],
    ["nothing", undefined, "", "<none>"],
  ])("turns %s into a cell", (_, value, asText, asOrNone) => {
    expect(text(value)).toBe(asText);
    expect(orNone(value)).toBe(asOrNone);
  });
});
