import { beforeAll, describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import type { CertificateSigningRequestCondition } from "../../../src/api/types/csr.js";
import { csrConditionSummary } from "../../../src/api/conditions.js";
import { b64, condition, csrObject, ctx, definition, NOW, NOW_TEXT, pki, runUpdate, summary } from "./fixtures.js";

const def = definition("CertificateSigningRequest");
const EARLIER = "2029-12-31T00:00:00Z";

type State = "none" | "Approved" | "Denied" | "Failed" | "Approved,Issued";

/** A stored request in `state` (conditions with fixed earlier timestamps). */
async function storedIn(state: State): Promise<ApiObject> {
  const stamp = { lastUpdateTime: EARLIER, lastTransitionTime: EARLIER };
  const conditions = state === "none" ? [] : [condition(state.split(",")[0]!, stamp)];
  const obj = await csrObject({ conditions, ...(state === "Approved,Issued" ? { certificate: b64(pki().leafPem) } : {}) });
  obj.metadata.creationTimestamp = EARLIER;
  return obj;
}

function conditionsOf(obj: ApiObject): CertificateSigningRequestCondition[] {
  return (obj.status as { conditions?: CertificateSigningRequestCondition[] } | undefined)?.conditions ?? [];
}

type Change = (next: ApiObject) => void;
const addCondition = (type: string, extra: Record<string, unknown> = {}): Change => (next) => {
  const status = (next.status ??= {}) as { conditions?: unknown[] };
  (status.conditions ??= []).push(condition(type, extra));
};
const removeCondition = (type: string): Change => (next) => {
  const status = next.status as { conditions: { type: string }[] };
  status.conditions = status.conditions.filter((c) => c.type !== type);
};
const rawCertificate = (value: string): Change => (next) => {
  ((next.status ??= {}) as Record<string, unknown>).certificate = value;
};
const setCertificate = (pem: () => string): Change => (next) => rawCertificate(b64(pem()))(next);
const dropCertificate: Change = (next) => {
  delete (next.status as Record<string, unknown>).certificate;
};
const both = (a: Change, b: Change): Change => (next) => {
  a(next);
  b(next);
};

async function apply(state: State, subresource: string, change: Change) {
  const previous = await storedIn(state);
  const next = structuredClone(previous);
  change(next);
  return runUpdate(def, next, previous, ctx({ subresource }));
}

describe("CertificateSigningRequest states and transitions (seed §3)", () => {
  it.each([
    ["no condition", "approval adds Approved", "none", "approval", addCondition("Approved"), "Approved"],
    ["no condition", "approval adds Denied", "none", "approval", addCondition("Denied"), "Denied"],
    ["Approved", "status sets the certificate", "Approved", "status", setCertificate(() => pki().leafPem), "Approved,Issued"],
    ["no condition", "status adds Failed", "none", "status", addCondition("Failed"), "Pending,Failed"],
    ["Approved", "status adds Failed", "Approved", "status", addCondition("Failed"), "Approved,Failed"],
    ["Denied", "status adds Failed", "Denied", "status", addCondition("Failed"), "Denied,Failed"],
  ] as const)("from %s, %s", async (_, __, state, subresource, change, expected) => {
    const { obj, errors } = await apply(state, subresource, change);
    expect(errors).toEqual([]);
    expect(csrConditionSummary(obj as never)).toBe(expected);
  });

  it.each([
    ["Approved", "approval adds Denied", "Approved", "approval", addCondition("Denied"), "status.conditions[1].type FieldValueInvalid"],
    ["Denied", "approval adds Approved", "Denied", "approval", addCondition("Approved"), "status.conditions[1].type FieldValueInvalid"],
    ["no condition", "status adds Approved", "none", "status", addCondition("Approved"), "status.conditions FieldValueForbidden"],
    ["no condition", "status adds Denied", "none", "status", addCondition("Denied"), "status.conditions FieldValueForbidden"],
    ["no condition", "approval adds Failed", "none", "approval", addCondition("Failed"), "status.conditions FieldValueForbidden"],
    ["Approved", "approval removes Approved", "Approved", "approval", removeCondition("Approved"), "status.conditions FieldValueForbidden"],
    ["Denied", "approval removes Denied", "Denied", "approval", removeCondition("Denied"), "status.conditions FieldValueForbidden"],
    ["Approved", "status removes Approved", "Approved", "status", removeCondition("Approved"), "status.conditions FieldValueForbidden"],
    ["Failed", "status removes Failed", "Failed", "status", removeCondition("Failed"), "status.conditions FieldValueForbidden"],
    ["no condition", "status sets a certificate", "none", "status", setCertificate(() => pki().leafPem), "status.certificate FieldValueForbidden"],
    ["Denied", "status sets a certificate", "Denied", "status", setCertificate(() => pki().leafPem), "status.certificate FieldValueForbidden"],
    ["Approved with a certificate", "status replaces it", "Approved,Issued", "status", setCertificate(() => pki().caPem), "status.certificate FieldValueForbidden"],
    ["Approved with a certificate", "status removes it", "Approved,Issued", "status", dropCertificate, "status.certificate FieldValueForbidden"],
    ["Approved with a certificate", "status adds Failed", "Approved,Issued", "status", addCondition("Failed"), "status.certificate FieldValueForbidden"],
    ["Approved", "approval sets a certificate (ignored, so nothing to refuse) then adds Failed", "Approved", "approval", both(setCertificate(() => pki().leafPem), addCondition("Failed")), "status.conditions FieldValueForbidden"],
  ] as const)("from %s, refuses: %s", async (_, __, state, subresource, change, expected) => {
    const { errors } = await apply(state, subresource, change);
    expect(summary(errors)).toContain(expected);
  });
});

describe("CertificateSigningRequest condition rules", () => {
  it.each([
    ["a custom condition with status False", [condition("Approved"), condition("Reviewed", { status: "False" })]],
    ["a custom condition with status Unknown", [condition("Reviewed", { status: "Unknown" })]],
  ])("accepts %s", async (_, conditions) => {
    const { errors } = await apply("none", "approval", (n) => {
      n.status = { conditions };
    });
    expect(errors).toEqual([]);
  });

  it.each([
    ["Approved with status False", [condition("Approved", { status: "False" })], "status.conditions[0].status FieldValueNotSupported"],
    ["Denied with status Unknown", [condition("Denied", { status: "Unknown" })], "status.conditions[0].status FieldValueNotSupported"],
    ["a custom condition with status Maybe", [condition("Reviewed", { status: "Maybe" })], "status.conditions[0].status FieldValueNotSupported"],
    ["a condition without a type", [{ status: "True" }], "status.conditions[0].type FieldValueRequired"],
    ["a condition without a status", [{ type: "Approved" }], "status.conditions[0].status FieldValueRequired"],
    ["two conditions of one type", [condition("Approved"), condition("Approved")], "status.conditions[1].type FieldValueDuplicate"],
    ["Approved together with Denied", [condition("Approved"), condition("Denied")], "status.conditions[1].type FieldValueInvalid"],
    ["a condition with a malformed time", [condition("Approved", { lastUpdateTime: "yesterday" })], "status.conditions[0].lastUpdateTime FieldValueInvalid"],
    ["conditions that are not a list", { type: "Approved" }, "status.conditions FieldValueTypeInvalid"],
  ])("refuses %s", async (_, conditions, expected) => {
    const { errors } = await apply("none", "approval", (n) => {
      n.status = { conditions };
    });
    expect(summary(errors)).toContain(expected);
  });
});

describe("CertificateSigningRequest condition timestamps", () => {
  it("stamps a new condition's lastUpdateTime and lastTransitionTime with now", async () => {
    const { obj } = await apply("none", "approval", addCondition("Approved"));
    expect(conditionsOf(obj)[0]).toMatchObject({ lastUpdateTime: NOW_TEXT, lastTransitionTime: NOW_TEXT });
  });

  it("keeps timestamps the writer set", async () => {
    const { obj } = await apply("none", "approval", addCondition("Approved", { lastUpdateTime: EARLIER, lastTransitionTime: EARLIER }));
    expect(conditionsOf(obj)[0]).toMatchObject({ lastUpdateTime: EARLIER, lastTransitionTime: EARLIER });
  });

  it("keeps the stored lastTransitionTime when the type keeps its status", async () => {
    const previous = await csrObject({ conditions: [condition("Reviewed", { status: "False", lastUpdateTime: EARLIER, lastTransitionTime: EARLIER })] });
    const next = structuredClone(previous);
    next.status = { conditions: [condition("Reviewed", { status: "False", message: "again" })] };
    const { obj } = runUpdate(def, next, previous, ctx({ subresource: "approval" }));
    expect(conditionsOf(obj)[0]).toMatchObject({ lastUpdateTime: NOW_TEXT, lastTransitionTime: EARLIER });
  });

  it("moves lastTransitionTime to now when the status changes", async () => {
    const previous = await csrObject({ conditions: [condition("Reviewed", { status: "False", lastUpdateTime: EARLIER, lastTransitionTime: EARLIER })] });
    const next = structuredClone(previous);
    next.status = { conditions: [condition("Reviewed", { status: "True" })] };
    const { obj } = runUpdate(def, next, previous, ctx({ subresource: "approval", now: NOW }));
    expect(conditionsOf(obj)[0]).toMatchObject({ lastTransitionTime: NOW_TEXT });
  });
});

describe("CertificateSigningRequest subresources keep what they do not own", () => {
  let approved: ApiObject;
  beforeAll(async () => {
    approved = await storedIn("Approved");
  });

  it("approval keeps the spec and the certificate from storage", async () => {
    const next = structuredClone(approved);
    (next.spec as Record<string, unknown>).signerName = "example.com/other";
    (next.status as Record<string, unknown>).certificate = b64(pki().leafPem);
    const { obj, errors } = runUpdate(def, next, approved, ctx({ subresource: "approval" }));
    expect(errors).toEqual([]);
    expect(obj.spec).toEqual(approved.spec);
    expect(obj.status).not.toHaveProperty("certificate");
  });

  it("status keeps the spec from storage", () => {
    const next = structuredClone(approved);
    (next.spec as Record<string, unknown>).usages = ["server auth"];
    const { obj, errors } = runUpdate(def, next, approved, ctx({ subresource: "status" }));
    expect(errors).toEqual([]);
    expect(obj.spec).toEqual(approved.spec);
  });

  it("status does not apply a change to the Approved condition (a stale copy cannot rewrite approval)", () => {
    const next = structuredClone(approved);
    conditionsOf(next)[0]!.reason = "Rewritten";
    const { obj, errors } = runUpdate(def, next, approved, ctx({ subresource: "status" }));
    expect(errors).toEqual([]);
    expect(conditionsOf(obj)[0]!.reason).toBe("Test");
  });

  it("approval does not apply a change to a Failed condition", async () => {
    const failed = await storedIn("Failed");
    const next = structuredClone(failed);
    conditionsOf(next)[0]!.message = "rewritten";
    const { obj, errors } = runUpdate(def, next, failed, ctx({ subresource: "approval" }));
    expect(errors).toEqual([]);
    expect(conditionsOf(obj)[0]).not.toHaveProperty("message");
  });
});

describe("CertificateSigningRequest status.certificate", () => {
  it.each([
    ["a leaf issued by openssl", () => pki().leafPem],
    ["a leaf and its CA", () => pki().leafPem + pki().caPem],
    ["blocks with explanatory text around them", () => `issued by ca\n${pki().leafPem}trailing text\n`],
  ])("accepts %s", async (_, pem) => {
    expect((await apply("Approved", "status", setCertificate(pem))).errors).toEqual([]);
  });

  it.each([
    ["text that is not base64", rawCertificate("%%%")],
    ["text without PEM blocks", setCertificate(() => "no certificate here")],
    ["a CERTIFICATE REQUEST block", setCertificate(() => pki().csrPem)],
    ["a block with PEM headers", setCertificate(() => pki().leafPem.replace("-----\n", "-----\nProc-Type: 4,ENCRYPTED\n\n"))],
    ["a block that holds no certificate", setCertificate(() => "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")],
  ])("refuses %s", async (_, change) => {
    expect(summary((await apply("Approved", "status", change)).errors)).toEqual(["status.certificate FieldValueInvalid"]);
  });
});
