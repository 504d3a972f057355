// Parsing of `Warning` response headers.
import { describe, expect, it } from "vitest";
import { parseWarnings } from "../../src/client/warnings.js";

describe("Warning header parsing", () => {
  it.each<[string, string | string[] | undefined, string[]]>([
    ["nothing without a header", undefined, []],
    ["one warning", '299 - "v1beta1 ClusterTrustBundle is deprecated"', ["v1beta1 ClusterTrustBundle is deprecated"]],
    ["several warnings joined by commas", '299 - "a, with comma", 299 - "b"', ["a, with comma", "b"]],
    ["escaped quotes", '299 - "field \\"spec.x\\" is unknown"', ['field "spec.x" is unknown']],
    ["a warning with a date", '299 apiserver "late" "Wed, 21 Oct 2015 07:28:00 GMT"', ["late"]],
    ["one value per header line", ['299 - "one"', '299 - "two"'], ["one", "two"]],
    ["a value not in warning form, whole", "something odd", ["something odd"]],
  ])("reads %s", (_name, header, expected) => {
    expect(parseWarnings(header)).toEqual(expected);
  });
});
