// Server-side apply through the registry: create-if-absent, ownership, conflicts, force, pruning, dryRun, bad bodies.
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { isPlatformError, type PlatformError } from "../../../src/errors.js";
import { registryFixture } from "../fixtures.js";

const role = (rules: unknown[] | undefined, labels?: Record<string, string>, name = "r"): ApiObject =>
  ({ apiVersion: "rbac.authorization.platform.io/v1", kind: "ClusterRole", metadata: { name, ...(labels ? { labels } : {}) }, ...(rules ? { rules } : {}) }) as ApiObject;
const rule = (verb: string) => ({ verbs: [verb], apiGroups: [""], resources: ["pods"] });

async function fixture() {
  const f = await registryFixture();
  const store = f.store("ClusterRole");
  const apply = (config: unknown, manager: string, extra: { force?: boolean; dryRun?: boolean } = {}) =>
    store.apply(undefined, "r", structuredClone(config), { fieldManager: manager, force: extra.force ?? false, dryRun: extra.dryRun });
  return { ...f, roles: store, apply };
}

async function refusal(work: Promise<unknown>): Promise<PlatformError> {
  try {
    await work;
  } catch (err) {
    if (isPlatformError(err)) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

const managers = (o: ApiObject) => (o.metadata.managedFields ?? []).map((e) => [e.manager, e.operation, e.fieldsV1]);

describe("server-side apply", () => {
  it("creates an absent object (201) owned by the applier, and answers 200 after", async () => {
    const { apply } = await fixture();
    const first = await apply(role([rule("get")], { team: "a" }), "a");
    expect(first.code).toBe(201);
    expect(managers(first.object)).toEqual([["a", "Apply", { "f:metadata": { "f:labels": { "f:team": {} } }, "f:rules": {} }]]);
    const again = await apply(role([rule("get")], { team: "a" }), "a");
    expect(again.code).toBe(200);
    expect(again.object).toEqual(first.object);
  });

  it("refuses another manager's change with 409 naming field and manager; force takes the field", async () => {
    const { apply, roles } = await fixture();
    await apply(role([rule("get")], { team: "a" }), "a");
    const err = await refusal(apply(role([rule("list")]), "b"));
    expect(err.code).toBe("CONFLICT");
    expect(err.httpStatus).toBe(409);
    expect(err.message).toBe('Apply failed with 1 conflict: conflict with "a": .rules');
    expect(err.causes).toEqual([{ reason: "FieldManagerConflict", message: 'conflict with "a"', field: ".rules" }]);
    expect((await roles.get(undefined, "r")).object.rules).toEqual([rule("get")]);
    const forced = await apply(role([rule("list")]), "b", { force: true });
    expect(forced.object.rules).toEqual([rule("list")]);
    expect(managers(forced.object)).toEqual([
      ["a", "Apply", { "f:metadata": { "f:labels": { "f:team": {} } } }],
      ["b", "Apply", { "f:rules": {} }],
    ]);
  });

  it("lists several conflicts grouped by manager, Update managers with their apiVersion", async () => {
    const { apply, roles } = await fixture();
    await roles.create(undefined, role([rule("get")], { x: "1" }), { fieldManager: "editor" });
    await apply(role(undefined, { y: "1" }), "a");
    const err = await refusal(apply(role([rule("list")], { x: "2", y: "2" }), "b"));
    expect(err.message).toBe(
      'Apply failed with 3 conflicts: conflicts with "a":\n- .metadata.labels.y\nconflicts with "editor" using rbac.authorization.platform.io/v1:\n- .metadata.labels.x\n- .rules',
    );
  });

  it("shares a field applied with the same value; removes a field its applier drops unless another owns it", async () => {
    const { apply } = await fixture();
    await apply(role([rule("get")], { team: "a", only: "a" }), "a");
    await apply(role(undefined, { team: "a" }), "b");
    const dropped = await apply(role([rule("get")]), "a");
    // "only" was a's alone and goes; "team" stays with b.
    expect(dropped.object.metadata.labels).toEqual({ team: "a" });
    expect(managers(dropped.object)).toEqual([
      ["a", "Apply", { "f:rules": {} }],
      ["b", "Apply", { "f:metadata": { "f:labels": { "f:team": {} } } }],
    ]);
  });

  it("keeps fields written by updates when an applier drops them", async () => {
    const { apply, roles } = await fixture();
    await apply(role([rule("get")], { a: "1" }), "a");
    await roles.patch(undefined, "r", (o) => ({ ...o, metadata: { ...o.metadata, labels: { a: "1", u: "1" } } }), { fieldManager: "editor" });
    const r = await apply(role([rule("get")]), "a");
    expect(r.object.metadata.labels).toEqual({ u: "1" });
  });

  it("honours dryRun: nothing is stored, on create or update", async () => {
    const { apply, roles } = await fixture();
    const dry = await apply(role([rule("get")]), "a", { dryRun: true });
    expect(dry.object.rules).toEqual([rule("get")]);
    expect(await refusal(roles.get(undefined, "r"))).toMatchObject({ code: "NOT_FOUND" });
    const created = await apply(role([rule("get")]), "a");
    await apply(role([rule("list")]), "a", { dryRun: true });
    expect((await roles.get(undefined, "r")).object).toEqual(created.object);
  });

  it.each([
    ["a list", [], "the apply patch must be a YAML or JSON object"],
    ["another kind", { apiVersion: "rbac.authorization.platform.io/v1", kind: "Role", metadata: { name: "r" } }, "Specified patch kind: Role, expected: ClusterRole"],
    ["another version", { apiVersion: "v1", kind: "ClusterRole", metadata: { name: "r" } }, "Specified patch version: v1, expected: rbac.authorization.platform.io/v1"],
    ["another name", { apiVersion: "rbac.authorization.platform.io/v1", kind: "ClusterRole", metadata: { name: "s" } }, "does not match the name"],
    ["managedFields", { apiVersion: "rbac.authorization.platform.io/v1", kind: "ClusterRole", metadata: { name: "r", managedFields: [] } }, "metadata.managedFields must be nil"],
  ])("refuses %s with 400 and stores nothing", async (_what, body, words) => {
    const { apply, roles } = await fixture();
    const err = await refusal(apply(body, "a"));
    expect(err.httpStatus).toBe(400);
    expect(err.message).toContain(words);
    expect(await refusal(roles.get(undefined, "r"))).toMatchObject({ code: "NOT_FOUND" });
  });

  it("refuses a change of an immutable field with 422 and keeps the object", async () => {
    const { store } = await registryFixture();
    const rb = store("ClusterRoleBinding");
    const binding = (name: string) => ({
      apiVersion: "rbac.authorization.platform.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "b" },
      roleRef: { apiGroup: "rbac.authorization.platform.io", kind: "ClusterRole", name },
    });
    const created = await rb.apply(undefined, "b", binding("view"), { fieldManager: "a", force: false });
    const err = await refusal(rb.apply(undefined, "b", binding("edit"), { fieldManager: "a", force: false }));
    expect(err.httpStatus).toBe(422);
    expect((await rb.get(undefined, "b")).object).toEqual(created.object);
  });
});
