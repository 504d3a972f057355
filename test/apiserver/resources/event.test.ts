import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { definition, names, NOW, object, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const def = definition("Event");

function event(overrides: Record<string, unknown> = {}): ApiObject {
  const body: Record<string, unknown> = {
    eventTime: "2030-01-02T03:04:00.123456Z",
    action: "Sign",
    reason: "Issued",
    note: "issued a certificate",
    type: "Normal",
    regarding: { apiVersion: `${names.certificates}/v1`, kind: "CertificateSigningRequest", name: "csr-1" },
    reportingController: `${names.suffix}/signing-controller`,
    reportingInstance: "host-1",
    ...overrides,
  };
  for (const [k, v] of Object.entries(body)) if (v === undefined) delete body[k];
  return object(def, body);
}

const errorsOf = (overrides: Record<string, unknown>) => summary(runCreate(def, event(overrides)).errors);

describe("Event definition", () => {
  it("is namespaced in the events group with the ev short name", () => {
    expect(def).toMatchObject({ group: "events.platform.io", version: "v1", plural: "events", shortNames: ["ev"], namespaced: true });
  });

  it("prints LAST SEEN, TYPE, REASON, OBJECT and MESSAGE, the rest only wide", () => {
    expect(def.columns?.filter((c) => c.priority === 0).map((c) => c.name)).toEqual(["Last Seen", "Type", "Reason", "Object", "Message"]);
    const obj = event({ series: { count: 4, lastObservedTime: "2030-01-02T03:04:04.000000Z" } });
    expect(def.row?.(obj, NOW)).toEqual(["1s", "Normal", "Issued", "certificatesigningrequest/csr-1", "", `${names.suffix}/signing-controller, host-1`, "issued a certificate", "4s", 4, "x"]);
  });
});

describe("Event rules for new events", () => {
  it.each([
    ["a complete Normal event", {}],
    ["a Warning event", { type: "Warning" }],
    ["a 128-character action, reason and instance", { action: "a".repeat(128), reason: "r".repeat(128), reportingInstance: "i".repeat(128) }],
    ["a note of exactly 1024 bytes in two-byte characters", { note: "é".repeat(512) }],
    ["a series of count 1", { series: { count: 1, lastObservedTime: "2030-01-02T03:04:05.000000Z" } }],
    ["an event with a related object", { related: { kind: "Secret", namespace: "default", name: "s" } }],
    ["an eventTime without fraction", { eventTime: "2030-01-02T03:04:05Z" }],
  ])("accepts %s", (_, overrides) => {
    expect(errorsOf(overrides)).toEqual([]);
  });

  it.each([
    ["a missing eventTime", { eventTime: undefined }, "eventTime FieldValueRequired"],
    ["a malformed eventTime", { eventTime: "yesterday" }, "eventTime FieldValueInvalid"],
    ["a missing action", { action: undefined }, "action FieldValueRequired"],
    ["a missing reason", { reason: "" }, "reason FieldValueRequired"],
    ["a missing reportingController", { reportingController: undefined }, "reportingController FieldValueRequired"],
    ["a reportingController that is not a qualified name", { reportingController: "signing controller" }, "reportingController FieldValueInvalid"],
    ["a missing reportingInstance", { reportingInstance: undefined }, "reportingInstance FieldValueRequired"],
    ["a 129-character action", { action: "a".repeat(129) }, "action FieldValueInvalid"],
    ["a 129-character reason", { reason: "r".repeat(129) }, "reason FieldValueInvalid"],
    ["a 129-character reportingInstance", { reportingInstance: "i".repeat(129) }, "reportingInstance FieldValueInvalid"],
    ["a note of 1025 bytes", { note: `${"é".repeat(512)}x` }, "note FieldValueInvalid"],
    ["a missing type", { type: undefined }, "type FieldValueNotSupported"],
    ["an unknown type", { type: "Info" }, "type FieldValueNotSupported"],
    ["a series without count", { series: { lastObservedTime: "2030-01-02T03:04:05Z" } }, "series.count FieldValueRequired"],
    ["a series of count 0", { series: { count: 0, lastObservedTime: "2030-01-02T03:04:05Z" } }, "series.count FieldValueInvalid"],
    ["a series without lastObservedTime", { series: { count: 2 } }, "series.lastObservedTime FieldValueRequired"],
    ["a deprecated count", { deprecatedCount: 3 }, "deprecatedCount FieldValueInvalid"],
    ["a deprecated source", { deprecatedSource: { component: "x" } }, "deprecatedSource FieldValueInvalid"],
    ["a regarding reference that is a string", { regarding: "csr-1" }, "regarding FieldValueTypeInvalid"],
    ["a regarding name that is a number", { regarding: { kind: "Pod", name: 5 } }, "regarding.name FieldValueTypeInvalid"],
    ["a series count that is a string", { series: { count: "2", lastObservedTime: "2030-01-02T03:04:05Z" } }, "series.count FieldValueTypeInvalid"],
  ])("refuses %s", (_, overrides, expected) => {
    expect(errorsOf(overrides)).toEqual([expected]);
  });
});

describe("Event update", () => {
  it("accepts a series update", () => {
    const previous = stored(def, event());
    const next = structuredClone(previous);
    next.series = { count: 2, lastObservedTime: "2030-01-02T03:05:00.000000Z" };
    expect(runUpdate(def, next, previous).errors).toEqual([]);
  });

  it.each([
    ["note", "changed"],
    ["reason", "Other"],
    ["type", "Warning"],
    ["eventTime", "2030-01-02T03:05:00.000000Z"],
    ["regarding", { kind: "Pod", name: "p" }],
    ["reportingController", "example.com/other"],
  ])("refuses a change of %s as immutable", (field, value) => {
    const previous = stored(def, event());
    const next = structuredClone(previous);
    next[field] = value;
    expect(summary(runUpdate(def, next, previous).errors)).toEqual([`${field} FieldValueInvalid`]);
  });
});
