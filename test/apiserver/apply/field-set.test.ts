// FieldsV1 encoding of objects walked with the field schema, against managedFields upstream writes for the same objects.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { kindSchema } from "../../../src/api/schema.js";
import { compareObjects, fieldSetOf } from "../../../src/apiserver/apply/compare.js";
import { FieldSet, pathString, sortedElements, sortInPlace } from "../../../src/apiserver/apply/field-set.js";
import { ownable } from "../../../src/apiserver/apply/managers.js";

/** What an applier of `obj` owns. */
const encode = (obj: unknown, kind: string) => ownable(fieldSetOf(obj, kindSchema(kind)), undefined, false).toJSON();
/** What the creator of `obj` owns (upstream's create: an update from the empty object). */
const created = (obj: unknown, kind: string) => ownable(compareObjects(undefined, obj, kindSchema(kind)).added, undefined, false).toJSON();

describe("ownable", () => {
  it("resets what a writer cannot own without changing the set it was given (sets are shared between managers)", () => {
    const input = new FieldSet();
    for (const p of [["f:spec", "f:request"], ["f:status", "f:conditions"], ["f:metadata", "f:labels", "f:app"]]) input.insert(p);
    const before = input.toJSON();
    // Through a subresource only metadata and status are owned; with a status subresource the main resource owns no status.
    expect(ownable(input, "status", true).toJSON()).toEqual({ "f:metadata": { "f:labels": { "f:app": {} } }, "f:status": { "f:conditions": {} } });
    expect(ownable(input, undefined, true).toJSON()).toEqual({ "f:metadata": { "f:labels": { "f:app": {} } }, "f:spec": { "f:request": {} } });
    expect(input.toJSON()).toEqual(before);
    // Nothing to reset: the same set back.
    expect(ownable(input, undefined, false)).toBe(input);
  });
});

describe("FieldsV1 of an object", () => {
  it("a CSR: struct fields hold their leaves, an atomic list is one leaf; a created map is a member (`.`), an applied one not", () => {
    const csr = {
      apiVersion: "certificates.platform.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name: "a", labels: { app: "x" }, uid: "u", resourceVersion: "3" },
      spec: { request: "UEVN", signerName: "example.com/s", usages: ["client auth", "digital signature"], expirationSeconds: 600 },
    };
    const spec = { "f:expirationSeconds": {}, "f:request": {}, "f:signerName": {}, "f:usages": {} };
    expect(created(csr, "CertificateSigningRequest")).toEqual({ "f:metadata": { "f:labels": { ".": {}, "f:app": {} } }, "f:spec": spec });
    expect(encode(csr, "CertificateSigningRequest")).toEqual({ "f:metadata": { "f:labels": { "f:app": {} } }, "f:spec": spec });
  });

  it("a ClusterRole: rules are atomic, so one leaf whatever they hold", () => {
    const role = { apiVersion: "rbac/v1", kind: "ClusterRole", metadata: { name: "r" }, rules: [{ verbs: ["get"], resources: ["pods"], apiGroups: [""] }] };
    expect(encode(role, "ClusterRole")).toEqual({ "f:rules": {} });
  });

  it("a Pod: containers keyed by name (`k:`), items members with `.`, ports keyed by two fields sorted", () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", finalizers: ["a/b"] },
      spec: { containers: [{ name: "nginx", image: "nginx:1", ports: [{ protocol: "TCP", containerPort: 80 }] }] },
    };
    const json = created(pod, "Pod");
    expect(json).toEqual({
      "f:metadata": { "f:finalizers": { ".": {}, 'v:"a/b"': {} } },
      "f:spec": {
        "f:containers": {
          'k:{"name":"nginx"}': {
            ".": {},
            "f:image": {},
            "f:name": {},
            // Optional lists are members when they appear (`.`); required ones (containers) are not, as upstream.
            "f:ports": { ".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': { ".": {}, "f:containerPort": {}, "f:protocol": {} } },
          },
        },
      },
    });
    // The encoding reads back to the same set, and paths print as upstream's conflicts do.
    const set = FieldSet.fromJSON(json);
    expect(set.toJSON()).toEqual(json);
    expect(set.paths().map(pathString)).toContain('.spec.containers[name="nginx"].ports[containerPort=80,protocol="TCP"]');
    expect(set.paths().map(pathString)).toContain('.metadata.finalizers[="a/b"]');
  });

  it("writes elements in upstream's order: f:, k: (numbers as numbers), v:, then `.` last", () => {
    const set = new FieldSet();
    set.insert(["f:z"]);
    set.insert(['k:{"containerPort":443}']);
    set.insert(['k:{"containerPort":80}']);
    set.insert(['v:"b"']);
    set.insert(["f:a"]);
    set.member = true;
    expect(JSON.stringify(set.toJSON())).toBe('{"f:a":{},"f:z":{},"k:{\\"containerPort\\":80}":{},"k:{\\"containerPort\\":443}":{},"v:\\"b\\"":{},".":{}}');
  });
});

describe("comparison", () => {
  const schema = kindSchema("Pod");
  const pod = (image: string, extra: Record<string, unknown> = {}) => ({ spec: { containers: [{ name: "c", image, ...extra }] } });

  it("names the changed leaf, and an added item with its fields", () => {
    const c = compareObjects(pod("a"), pod("b"), schema);
    expect(c.modified.paths().map(pathString)).toEqual(['.spec.containers[name="c"].image']);
    expect(c.added.empty && c.removed.empty).toBe(true);
    const added = compareObjects(pod("a"), { spec: { containers: [{ name: "c", image: "a" }, { name: "d" }] } }, schema).added;
    expect(added.paths().map(pathString)).toEqual(['.spec.containers[name="d"]', '.spec.containers[name="d"].name']);
  });

  it("a removed field is removed, nothing else", () => {
    const c = compareObjects(pod("a", { command: ["x"] }), pod("a"), schema);
    expect(c.removed.paths().map(pathString)).toEqual(['.spec.containers[name="c"].command']);
    expect(c.added.empty && c.modified.empty).toBe(true);
  });
});

describe("sortInPlace", () => {
  it("orders as Array.prototype.sort does, stably, short arrays and long ones", () => {
    const byKey = (a: { k: number }, b: { k: number }) => a.k - b.k;
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 3 }), { maxLength: 40 }), fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 40 }), (names, keys) => {
        expect(sortInPlace([...names])).toEqual([...names].sort());
        const items = keys.map((k, i) => ({ k, i }));
        expect(sortInPlace([...items], byKey)).toEqual([...items].sort(byKey));
      }),
      { numRuns: 500 },
    );
  });

  it("sorts path elements in upstream's order: names, keys, values, indices (numbers as numbers)", () => {
    expect(sortedElements(["i:10", "k:{\"name\":\"b\"}", "f:b", "i:2", "k:{\"name\":\"a\"}", "f:a", "v:2", "v:10"])).toEqual([
      "f:a",
      "f:b",
      'k:{"name":"a"}',
      'k:{"name":"b"}',
      "v:2",
      "v:10",
      "i:2",
      "i:10",
    ]);
  });
});
