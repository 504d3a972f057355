import { beforeAll, describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { groupNames } from "../../../src/api/group.js";
import { KNOWN_USAGES } from "../../../src/pki/usages.js";
import { csr } from "../../fixtures/csr.js";
import { ADMIN, b64, csrObject, ctx, definition, pki, pythonCsr, requestB64, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const def = definition("CertificateSigningRequest");

const createErrors = async (options: Parameters<typeof csrObject>[0]) => summary(runCreate(def, await csrObject(options)).errors);

describe("CertificateSigningRequest definition", () => {
  it("is cluster-scoped in the certificates group with the csr short name, approval, revocation and status", () => {
    expect(def).toMatchObject({ group: "certificates.platform.io", version: "v1", plural: "certificatesigningrequests", shortNames: ["csr"], namespaced: false });
    expect(Object.keys(def.strategy.subresources ?? {}).sort()).toEqual(["approval", "revocation", "status"]);
  });

  it("takes its group from the suffix", () => {
    expect(definition("CertificateSigningRequest", groupNames("k8s.io")).group).toBe("certificates.k8s.io");
  });

  it("offers spec.signerName to field selectors", async () => {
    expect(def.fieldSelectors?.["spec.signerName"]?.(await csrObject({ signerName: "example.com/foo" }))).toBe("example.com/foo");
  });
});

describe("CertificateSigningRequest spec.request", () => {
  let pems: Record<string, string>;
  beforeAll(async () => {
    const real = await csr({ cn: "a" });
    const der = Buffer.from(real.der);
    const tampered = Buffer.from(real.der);
    tampered[tampered.length - 5]! ^= 0xff;
    const wrap = (label: string, bytes: Buffer) => `-----BEGIN ${label}-----\n${bytes.toString("base64").replace(/(.{64})/g, "$1\n")}\n-----END ${label}-----\n`;
    pems = {
      der: der.toString("latin1"),
      certificate: pki().caPem,
      legacyLabel: wrap("NEW CERTIFICATE REQUEST", der),
      tampered: wrap("CERTIFICATE REQUEST", tampered),
      garbage: wrap("CERTIFICATE REQUEST", Buffer.from("not a request")),
      headers: `-----BEGIN CERTIFICATE REQUEST-----\nProc-Type: 4,ENCRYPTED\n\n${der.toString("base64")}\n-----END CERTIFICATE REQUEST-----\n`,
    };
  });

  it.each([
    ["a P-256 request from the fixture builder", { cn: "system:node:a", o: ["system:nodes"] }],
    ["an RSA 2048 request", { cn: "rsa", key: "rsa2048" as const }],
    ["an Ed25519 request with SANs", { cn: "ed", key: "ed25519" as const, dns: ["a.example"] }],
  ])("accepts %s", async (_, options) => {
    expect(await createErrors({ request: await requestB64(options) })).toEqual([]);
  });

  it.each([
    ["openssl", () => pki().csrPem],
    ["python cryptography", pythonCsr],
  ])("accepts a request made by %s", async (_, pem) => {
    expect(await createErrors({ request: b64(pem()) })).toEqual([]);
  });

  it.each([
    ["an empty request", () => "", "spec.request FieldValueRequired"],
    ["text that is not base64", () => "%%% not base64 %%%", "spec.request FieldValueInvalid"],
    ["base64 of DER rather than PEM", () => b64(pems.der!), "spec.request FieldValueInvalid"],
    ["a CERTIFICATE block", () => b64(pems.certificate!), "spec.request FieldValueInvalid"],
    ["the legacy NEW CERTIFICATE REQUEST label", () => b64(pems.legacyLabel!), "spec.request FieldValueInvalid"],
    ["a request whose signature does not verify", () => b64(pems.tampered!), "spec.request FieldValueInvalid"],
    ["a block that holds no request", () => b64(pems.garbage!), "spec.request FieldValueInvalid"],
    ["a block with PEM headers", () => b64(pems.headers!), "spec.request FieldValueInvalid"],
  ])("refuses %s", async (_, request, expected) => {
    expect(await createErrors({ request: request() })).toEqual([expected]);
  });

  it("names the parsing problem without echoing the request bytes", async () => {
    const [error] = runCreate(def, await csrObject({ request: b64(pems.tampered!) })).errors;
    expect(error?.message).toMatch(/^Invalid value: "<request data>": .*signature/i);
  });
});

describe("CertificateSigningRequest spec.signerName", () => {
  it.each(["example.com/foo", "platform.io/apiserver-client", "a.b.c/d.e-f", "sub.example.com/ns.name", `${"a".repeat(63)}.com/x`])("accepts %s", async (signerName) => {
    expect(await createErrors({ signerName })).toEqual([]);
  });

  it.each([
    ["an empty name", "", ["spec.signerName FieldValueRequired"]],
    ["a name without a path", "example.com", ["spec.signerName FieldValueInvalid"]],
    ["a name with two slashes", "example.com/a/b", ["spec.signerName FieldValueInvalid"]],
    ["a single-label domain", "com/foo", ["spec.signerName FieldValueInvalid"]],
    ["an upper-case domain", "Example.com/foo", ["spec.signerName FieldValueInvalid"]],
    ["an empty path", "example.com/", ["spec.signerName FieldValueInvalid"]],
    ["an upper-case path", "example.com/Foo", ["spec.signerName FieldValueInvalid"]],
    ["a domain label starting with a hyphen", "-a.com/foo", ["spec.signerName FieldValueInvalid"]],
    ["a domain label above 63 characters", `${"a".repeat(64)}.com/x`, ["spec.signerName FieldValueInvalid"]],
    ["a name above 571 characters", `example.com/${Array(3).fill("a".repeat(200)).join(".")}`, ["spec.signerName FieldValueTooLong"]],
    ["the legacy signer", "platform.io/legacy-unknown", ["spec.signerName FieldValueInvalid"]],
  ])("refuses %s", async (_, signerName, expected) => {
    expect(await createErrors({ signerName })).toEqual(expected);
  });
});

describe("CertificateSigningRequest spec.expirationSeconds and spec.usages", () => {
  it.each([600, 3600, 2 ** 31 - 1])("accepts a lifetime of %i seconds", async (expirationSeconds) => {
    expect(await createErrors({ expirationSeconds })).toEqual([]);
  });

  it.each([599, 0, -1])("refuses a lifetime of %i seconds", async (expirationSeconds) => {
    expect(await createErrors({ expirationSeconds })).toEqual(["spec.expirationSeconds FieldValueInvalid"]);
  });

  it.each([
    ["all 23 allowed usages", [...KNOWN_USAGES]],
    ["no usages", []],
    ["the typical serving usages", ["key encipherment", "digital signature", "server auth"]],
  ])("accepts %s", async (_, usages) => {
    expect(await createErrors({ usages })).toEqual([]);
  });

  it.each([
    ["an unknown usage", ["client auth", "clientAuth"], ["spec.usages[1] FieldValueNotSupported"]],
    ["a usage in the wrong case", ["Client Auth"], ["spec.usages[0] FieldValueNotSupported"]],
    ["a repeated usage", ["client auth", "digital signature", "client auth"], ["spec.usages[2] FieldValueDuplicate"]],
  ])("refuses %s", async (_, usages, expected) => {
    expect(await createErrors({ usages })).toEqual(expected);
  });
});

describe("CertificateSigningRequest create", () => {
  it("sets the requester from the authenticated user and drops what the client claimed", async () => {
    const { obj } = runCreate(def, await csrObject({ spec: { username: "mallory", uid: "m", groups: ["system:masters"], extra: { x: ["y"] } } }));
    expect(obj.spec).toMatchObject({ username: ADMIN.username, uid: ADMIN.uid, groups: ADMIN.groups, extra: ADMIN.extra });
  });

  it("leaves the requester empty when authentication is off", async () => {
    const { obj } = runCreate(def, await csrObject({ spec: { username: "mallory", groups: ["system:masters"] } }), ctx({ user: null }));
    expect(obj.spec).not.toHaveProperty("username");
    expect(obj.spec).not.toHaveProperty("groups");
  });

  it("clears a status sent with the request, so a request cannot be created approved or issued", async () => {
    const { obj, errors } = runCreate(def, await csrObject({ conditions: [{ type: "Approved", status: "True" }], certificate: b64(pki().leafPem) }));
    expect(errors).toEqual([]);
    expect(obj.status).toEqual({});
  });

  it("refuses an object without a spec", async () => {
    const obj = await csrObject();
    delete obj.spec;
    expect(summary(runCreate(def, obj).errors)).toEqual(["spec FieldValueRequired"]);
  });

  it.each([
    ["a string lifetime", { expirationSeconds: "600" }, "spec.expirationSeconds FieldValueTypeInvalid"],
    ["a fractional lifetime", { expirationSeconds: 600.5 }, "spec.expirationSeconds FieldValueTypeInvalid"],
    ["a lifetime beyond 32 bits", { expirationSeconds: 2 ** 31 }, "spec.expirationSeconds FieldValueInvalid"],
    ["usages as one string", { usages: "client auth" }, "spec.usages FieldValueTypeInvalid"],
    ["a numeric usage", { usages: [1] }, "spec.usages[0] FieldValueTypeInvalid"],
    ["a numeric signer name", { signerName: 7 }, "spec.signerName FieldValueTypeInvalid"],
    ["a request as an object", { request: { pem: "x" } }, "spec.request FieldValueTypeInvalid"],
  ])("refuses %s with a type error", async (_, spec, expected) => {
    expect(await createErrors({ spec })).toEqual([expected]);
  });

  it("treats JSON null as an absent optional field", async () => {
    const { obj, errors } = runCreate(def, await csrObject({ spec: { expirationSeconds: null } }));
    expect(errors).toEqual([]);
    expect(obj.spec).not.toHaveProperty("expirationSeconds");
  });
});

describe("CertificateSigningRequest update of the main resource", () => {
  let previous: ApiObject;
  beforeAll(async () => {
    previous = stored(def, await csrObject({ expirationSeconds: 3600 }));
  });

  it.each([
    ["request", async () => requestB64({ cn: "other" })],
    ["signerName", async () => "example.com/other"],
    ["expirationSeconds", async () => 7200],
    ["usages", async () => ["client auth"]],
    ["username", async () => "bob"],
    ["uid", async () => "uid-bob"],
    ["groups", async () => ["other"]],
    ["extra", async () => ({ k: ["v"] })],
  ])("refuses a change of spec.%s as immutable", async (field, value) => {
    const next = structuredClone(previous);
    (next.spec as Record<string, unknown>)[field] = await value();
    const { errors } = runUpdate(def, next, previous);
    expect(summary(errors)).toContain(`spec.${field} FieldValueInvalid`);
    expect(errors.find((e) => e.field === `spec.${field}`)?.message).toContain("field is immutable");
  });

  it("accepts a change of labels and keeps the generation still", () => {
    const next = structuredClone(previous);
    next.metadata.labels = { team: "a" };
    expect(runUpdate(def, next, previous).errors).toEqual([]);
    expect(def.strategy.specChanged?.(next, previous)).toBe(false);
  });

  it("counts a spec change for the generation", () => {
    const next = structuredClone(previous);
    (next.spec as Record<string, unknown>).usages = ["client auth"];
    expect(def.strategy.specChanged?.(next, previous)).toBe(true);
  });

  it("ignores status written through the main resource and keeps the stored one", () => {
    const next = structuredClone(previous);
    next.status = { conditions: [{ type: "Approved", status: "True" }], certificate: b64(pki().leafPem) };
    const { obj, errors } = runUpdate(def, next, previous);
    expect(errors).toEqual([]);
    expect(obj.status).toEqual(previous.status);
  });
});
