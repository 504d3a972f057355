import { describe, expect, it } from "vitest";
import { csrConditionSummary, findCondition, isApproved, isDenied, isFailed, isIssued } from "../../src/api/conditions.js";
import type { CertificateSigningRequestStatus } from "../../src/api/types/csr.js";

const withStatus = (types: string[], certificate?: string) => ({
  status: { conditions: types.map((type) => ({ type, status: "True" as const })), ...(certificate ? { certificate } : {}) } as CertificateSigningRequestStatus,
});

describe("CSR condition summary (the CONDITION column)", () => {
  it.each([
    [[], undefined, "Pending"],
    [["Approved"], undefined, "Approved"],
    [["Approved"], "Y2VydA==", "Approved,Issued"],
    [["Denied"], undefined, "Denied"],
    [["Failed"], undefined, "Pending,Failed"],
    [["Approved", "Failed"], undefined, "Approved,Failed"],
    [["Denied", "Failed"], undefined, "Denied,Failed"],
    [["Reviewed"], undefined, "Pending"],
  ])("shows conditions %j with certificate %s as %s", (types, certificate, expected) => {
    expect(csrConditionSummary(withStatus(types, certificate))).toBe(expected);
  });

  it("shows a request without status as Pending", () => {
    expect(csrConditionSummary({})).toBe("Pending");
  });
});

describe("CSR condition reads", () => {
  it.each([
    ["Approved", isApproved],
    ["Denied", isDenied],
    ["Failed", isFailed],
  ] as const)("recognises %s only with status True", (type, read) => {
    expect(read(withStatus([type]))).toBe(true);
    expect(read(withStatus(["Other"]))).toBe(false);
    expect(read({ status: { conditions: [{ type, status: "False" }] } })).toBe(false);
  });

  it("finds a condition by type and tolerates a malformed list", () => {
    expect(findCondition(withStatus(["Approved", "Failed"]), "Failed")?.type).toBe("Failed");
    expect(findCondition({ status: { conditions: "x" as never } }, "Failed")).toBeUndefined();
  });

  it.each([
    ["a certificate", "Y2VydA==", true],
    ["an empty certificate", "", false],
    ["no certificate", undefined, false],
  ])("counts a request with %s as issued: %s", (_, certificate, expected) => {
    expect(isIssued({ status: certificate === undefined ? {} : { certificate } })).toBe(expected);
  });
});
