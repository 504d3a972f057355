// Protobuf request bodies: each kind kubectl sends decodes to its JSON form; anything malformed is a typed error.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PlatformError } from "../../../src/errors.js";
import { decodeProtobufObject, PROTOBUF_KINDS } from "../../../src/apiserver/http/protobuf.js";
import { bytes, entry, envelope, int, message, objectMeta, raw, type Part } from "./protobuf-encoder.js";

const b64 = (s: string) => Buffer.from(s).toString("base64");
const T = 1_900_000_000;

describe("decodeProtobufObject", () => {
  it.each<[string, Buffer, Record<string, unknown>]>([
    ["ServiceAccount (kubectl create sa)", envelope("v1", "ServiceAccount", objectMeta("builder"), message(2, bytes(1, "Secret"), bytes(3, "tok")), message(3, bytes(1, "pull")), int(4, false)),
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "builder" }, secrets: [{ kind: "Secret", name: "tok" }], imagePullSecrets: [{ name: "pull" }], automountServiceAccountToken: false }],
    ["Namespace (kubectl create ns)", envelope("v1", "Namespace", objectMeta("team1"), message(2), message(3, bytes(1, ""))),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "team1" }, spec: {}, status: {} }],
    ["Secret (kubectl create secret generic)", envelope("v1", "Secret", objectMeta("s1"), entry(2, "a", bytes(2, "b")), entry(2, "bin", bytes(2, Buffer.from([0, 255]))), bytes(3, "Opaque"), entry(4, "plain", bytes(2, "text")), int(5, true)),
      { apiVersion: "v1", kind: "Secret", metadata: { name: "s1" }, data: { a: b64("b"), bin: "AP8=" }, type: "Opaque", stringData: { plain: "text" }, immutable: true }],
    ["TokenRequest (kubectl create token)", envelope("authentication.k8s.io/v1", "TokenRequest", objectMeta(""), message(2, bytes(1, "x"), bytes(1, "y"), message(3, bytes(1, "Secret"), bytes(2, "v1"), bytes(3, "s1"), bytes(4, "")), int(4, 1200)), message(3, bytes(1, ""), message(2))),
      { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", metadata: {}, spec: { audiences: ["x", "y"], boundObjectRef: { kind: "Secret", apiVersion: "v1", name: "s1" }, expirationSeconds: 1200 }, status: {} }],
    ["SelfSubjectReview (kubectl auth whoami)", envelope("authentication.k8s.io/v1", "SelfSubjectReview", objectMeta(""), message(2, message(1, bytes(1, ""), bytes(2, "")))),
      { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview", metadata: {}, status: { userInfo: {} } }],
    ["TokenReview", envelope("authentication.k8s.io/v1", "TokenReview", objectMeta(""), message(2, bytes(1, "tok"), bytes(2, "api"))),
      { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", metadata: {}, spec: { token: "tok", audiences: ["api"] } }],
    ["SubjectAccessReview", envelope("authorization.k8s.io/v1", "SubjectAccessReview", objectMeta(""), message(2, message(1, bytes(1, "ns"), bytes(2, "get"), bytes(3, ""), bytes(5, "pods"), bytes(7, "p")), bytes(3, "jane"), bytes(4, "devs"), entry(5, "scopes", message(2, bytes(1, "a"), bytes(1, "b"))), bytes(6, "u1"))),
      { apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", metadata: {}, spec: { resourceAttributes: { namespace: "ns", verb: "get", resource: "pods", name: "p" }, user: "jane", groups: ["devs"], extra: { scopes: ["a", "b"] }, uid: "u1" } }],
    ["ClusterRole (kubectl create clusterrole)", envelope("rbac.authorization.k8s.io/v1", "ClusterRole", objectMeta("reader"), message(2, bytes(1, "get"), bytes(1, "list"), bytes(2, ""), bytes(3, "pods"), bytes(4, "one")), message(2, bytes(1, "get"), bytes(5, "/healthz"))),
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "reader" }, rules: [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"], resourceNames: ["one"] }, { verbs: ["get"], nonResourceURLs: ["/healthz"] }] }],
    ["RoleBinding (kubectl create rolebinding)", envelope("rbac.authorization.k8s.io/v1", "RoleBinding", objectMeta("rb", [bytes(3, "team")]), message(2, bytes(1, "ServiceAccount"), bytes(2, ""), bytes(3, "robot"), bytes(4, "team")), message(3, bytes(1, "rbac.authorization.k8s.io"), bytes(2, "Role"), bytes(3, "r"))),
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "rb", namespace: "team" }, subjects: [{ kind: "ServiceAccount", name: "robot", namespace: "team" }], roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r" } }],
    ["CertificateSigningRequest (kubectl certificate approve)",
      envelope("certificates.k8s.io/v1", "CertificateSigningRequest",
        objectMeta("csr-1", [bytes(5, "uid-1"), bytes(6, "42"), entry(11, "team", bytes(2, "a")), entry(12, "note", bytes(2, "")), message(17, bytes(1, "kubectl"), bytes(2, "Update"), message(4, int(1, T)), message(7, bytes(1, '{"f:spec":{}}')))]),
        message(2, bytes(1, "-----BEGIN CERTIFICATE REQUEST-----"), bytes(2, "alice"), bytes(4, "devs"), bytes(5, "client auth"), bytes(7, "example.com/x"), int(8, 3600)),
        message(3, message(1, bytes(1, "Approved"), bytes(2, "KubectlApprove"), bytes(3, ""), message(4, int(1, T)), message(5), bytes(6, "True")))),
      {
        apiVersion: "certificates.k8s.io/v1", kind: "CertificateSigningRequest",
        metadata: { name: "csr-1", uid: "uid-1", resourceVersion: "42", labels: { team: "a" }, annotations: { note: "" }, managedFields: [{ manager: "kubectl", operation: "Update", time: new Date(T * 1000).toISOString().replace(".000", ""), fieldsV1: { "f:spec": {} } }] },
        spec: { request: b64("-----BEGIN CERTIFICATE REQUEST-----"), username: "alice", groups: ["devs"], usages: ["client auth"], signerName: "example.com/x", expirationSeconds: 3600 },
        status: { conditions: [{ type: "Approved", reason: "KubectlApprove", lastUpdateTime: new Date(T * 1000).toISOString().replace(".000", ""), status: "True" }] },
      }],
  ])("decodes a %s body to the JSON a client would send", (_name, body, expected) => {
    expect(decodeProtobufObject(body)).toEqual(expected);
  });

  it("skips fields it does not know, as protobuf readers do", () => {
    const body = envelope("v1", "ServiceAccount", objectMeta("a"), int(99, 7), bytes(98, "x"), raw(0xa5, 0x01, 1, 2, 3, 4), raw(0xa9, 0x01, 1, 2, 3, 4, 5, 6, 7, 8));
    expect(decodeProtobufObject(body)).toEqual({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "a" } });
  });

  it("refuses a map key that would reach the prototype, as the JSON decoder does", () => {
    expect(() => decodeProtobufObject(envelope("v1", "Secret", objectMeta("s"), entry(2, "__proto__", bytes(2, "x")), entry(2, "ok", bytes(2, "y"))))).toThrow(
      expect.objectContaining({ code: "BAD_REQUEST", message: expect.stringContaining('the key "__proto__" of data is not accepted') }),
    );
    expect(({} as Record<string, unknown>)["x"]).toBeUndefined();
  });

  it.each([
    ["ClusterTrustBundle", "certificates.k8s.io/v1beta1"],
    ["Pod", "v1"],
    ["toString", "v1"],
  ])("answers 415 for a %s body, naming the kinds it takes", (kind, apiVersion) => {
    expect(() => decodeProtobufObject(envelope(apiVersion, kind, objectMeta("x")))).toThrow(
      expect.objectContaining({ code: "UNSUPPORTED_MEDIA_TYPE", message: expect.stringContaining(`send ${kind} as application/json`) }),
    );
    expect(PROTOBUF_KINDS).toEqual(expect.arrayContaining(["CertificateSigningRequest", "ServiceAccount", "TokenRequest", "SelfSubjectReview", "Secret", "Namespace"]));
  });

  it.each<[string, Buffer, RegExp]>([
    ["no envelope prefix", Buffer.from("k8s"), /missing the k8s envelope prefix/],
    ["a truncated varint", Buffer.concat([envelope("v1", "ServiceAccount"), raw(0x38, 0xff)]), /truncated varint/],
    ["a length past the end", Buffer.concat([envelope("v1", "ServiceAccount").subarray(0, 4), raw(0x0a, 0x7f, 0x01)]), /length past the end/],
    ["a string field sent as a number", envelope("v1", "ServiceAccount", message(1, int(1, 5))), /field name has wire type 0/],
    ["an unsupported wire type", envelope("v1", "ServiceAccount", raw(0xa3, 0x01)), /unsupported wire type 3/],
    ["an over-long varint", envelope("v1", "ServiceAccount", raw(0x38, ...Array<number>(11).fill(0xff), 0x01)), /varint too long/],
    ["fieldsV1 that is not JSON", envelope("v1", "ServiceAccount", objectMeta("a", [message(17, message(7, bytes(1, "{nope")))])), /fieldsV1 is not JSON/],
    ["a timestamp out of range", envelope("v1", "ServiceAccount", objectMeta("a", [message(9, int(1, 2n ** 62n))])), /timestamp is out of range/],
    ["a map value of the wrong wire type", envelope("v1", "ServiceAccount", objectMeta("a", [entry(11, "k", int(2, 5))])), /field labels value has wire type 0/],
  ])("refuses %s with BAD_REQUEST", (_name, body, message) => {
    expect(() => decodeProtobufObject(body)).toThrow(expect.objectContaining({ code: "BAD_REQUEST", message: expect.stringMatching(message) }));
  });
});

describe("decodeProtobufObject under fuzzing", () => {
  const typed = (body: Buffer) => {
    try {
      const out = decodeProtobufObject(body);
      expect(typeof out).toBe("object");
      JSON.stringify(out);
    } catch (err) {
      expect(err).toBeInstanceOf(PlatformError);
      expect(["BAD_REQUEST", "UNSUPPORTED_MEDIA_TYPE"]).toContain((err as PlatformError).code);
    }
  };

  it("never crashes on random bytes behind the envelope prefix", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), (tail) => typed(Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), tail]))), { numRuns: 2000 });
  });

  it("never crashes on random field trees inside every supported kind", () => {
    const part: fc.Arbitrary<Part> = fc.letrec<{ part: Part }>((tie) => ({
      part: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n })).map(([n, v]) => int(n, v)),
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.string({ maxLength: 20 })).map(([n, s]) => bytes(n, s)),
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.array(tie("part"), { maxLength: 4 })).map(([n, ps]) => message(n, ...ps)),
        fc.uint8Array({ maxLength: 6 }).map((b) => Buffer.from(b)),
      ),
    })).part;
    fc.assert(fc.property(fc.constantFrom(...PROTOBUF_KINDS), fc.array(part, { maxLength: 6 }), (kind, parts) => typed(envelope("v1", kind, ...parts))), { numRuns: 1500 });
  });
});
