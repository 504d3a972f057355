import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { definition, NOW, object, runCreate, summary } from "./fixtures.js";

const def = definition("Lease");
const lease = (spec: Record<string, unknown>) => object(def, { spec });

describe("Lease", () => {
  it("is namespaced in the coordination group of the suffix and prints its holder", () => {
    expect(def).toMatchObject({ group: "coordination.platform.io", version: "v1", plural: "leases", namespaced: true });
    expect(definition("Lease", groupNames("k8s.io")).group).toBe("coordination.k8s.io");
    expect(def.row?.(lease({ holderIdentity: "host-1_abc" }), NOW)).toEqual(["x", "host-1_abc", "<unknown>"]);
  });

  it.each([
    ["an empty spec", {}],
    ["a held lease", { holderIdentity: "host-1_abc", leaseDurationSeconds: 15, acquireTime: "2030-01-02T03:04:05.000000Z", renewTime: "2030-01-02T03:04:05.123456Z", leaseTransitions: 0 }],
    ["the built-in coordinated strategy with a preferred holder", { strategy: "OldestEmulationVersion", preferredHolder: "host-2" }],
    ["a custom qualified strategy", { strategy: "example.com/newest" }],
  ])("accepts %s", (_, spec) => {
    expect(runCreate(def, lease(spec)).errors).toEqual([]);
  });

  it.each([
    ["a zero duration", { leaseDurationSeconds: 0 }, "spec.leaseDurationSeconds FieldValueInvalid"],
    ["a negative duration", { leaseDurationSeconds: -5 }, "spec.leaseDurationSeconds FieldValueInvalid"],
    ["negative transitions", { leaseTransitions: -1 }, "spec.leaseTransitions FieldValueInvalid"],
    ["an unknown built-in strategy", { strategy: "Newest" }, "spec.strategy FieldValueNotSupported"],
    ["a custom strategy with an invalid name", { strategy: "example.com/new est" }, "spec.strategy FieldValueInvalid"],
    ["a preferred holder without strategy", { preferredHolder: "host-2" }, "spec.preferredHolder FieldValueForbidden"],
    ["a duration as a string", { leaseDurationSeconds: "15" }, "spec.leaseDurationSeconds FieldValueTypeInvalid"],
    ["a malformed renew time", { renewTime: "now" }, "spec.renewTime FieldValueInvalid"],
    ["a holder that is a number", { holderIdentity: 7 }, "spec.holderIdentity FieldValueTypeInvalid"],
  ])("refuses %s", (_, spec, expected) => {
    expect(summary(runCreate(def, lease(spec)).errors)).toEqual([expected]);
  });
});
