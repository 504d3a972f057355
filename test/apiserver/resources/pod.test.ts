import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { ctx, definition, NOW, object, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const def = definition("Pod");
const pod = (spec: Record<string, unknown> | null = { containers: [{ name: "app", image: "busybox" }] }) => object(def, spec ? { spec } : {});

describe("Pod create", () => {
  it("is a namespaced core kind with the po short name, starts Pending and defaults restartPolicy", () => {
    expect(def).toMatchObject({ group: "", version: "v1", plural: "pods", shortNames: ["po"], namespaced: true });
    const { obj, errors } = runCreate(def, pod());
    expect(errors).toEqual([]);
    expect(obj).toMatchObject({ status: { phase: "Pending" }, spec: { restartPolicy: "Always" } });
  });

  it("prints ready containers, status and restarts", () => {
    const obj = pod({ containers: [{ name: "a", image: "i" }, { name: "b", image: "i" }] });
    obj.status = { phase: "Running", podIP: "10.0.0.5", containerStatuses: [{ name: "a", ready: true, restartCount: 2 }, { name: "b", ready: false, restartCount: 1 }] };
    expect(def.row?.(obj, NOW)).toEqual(["x", "1/2", "Running", 3, "<unknown>", "10.0.0.5", "<none>"]);
  });

  it.each([
    ["one container", { containers: [{ name: "app", image: "busybox" }] }],
    ["init and main containers with distinct names", { initContainers: [{ name: "init", image: "i" }], containers: [{ name: "app", image: "a" }], restartPolicy: "Never" }],
    ["a service account", { containers: [{ name: "app", image: "a" }], serviceAccountName: "robot" }],
  ])("accepts %s", (_, spec) => {
    expect(runCreate(def, pod(spec)).errors).toEqual([]);
  });

  it.each([
    ["a pod without spec", null, "spec FieldValueRequired"],
    ["a pod without containers", { containers: [] }, "spec.containers FieldValueRequired"],
    ["a container without name", { containers: [{ image: "a" }] }, "spec.containers[0].name FieldValueRequired"],
    ["a container without image", { containers: [{ name: "app" }] }, "spec.containers[0].image FieldValueRequired"],
    ["an upper-case container name", { containers: [{ name: "App", image: "a" }] }, "spec.containers[0].name FieldValueInvalid"],
    ["two containers of one name", { containers: [{ name: "app", image: "a" }, { name: "app", image: "b" }] }, "spec.containers[1].name FieldValueDuplicate"],
    ["an init container named like a container", { initContainers: [{ name: "app", image: "i" }], containers: [{ name: "app", image: "a" }] }, "spec.containers[0].name FieldValueDuplicate"],
    ["an unknown restart policy", { containers: [{ name: "app", image: "a" }], restartPolicy: "Sometimes" }, "spec.restartPolicy FieldValueNotSupported"],
    ["containers as an object", { containers: { name: "app" } }, "spec.containers FieldValueTypeInvalid"],
    ["a numeric image", { containers: [{ name: "app", image: 3 }] }, "spec.containers[0].image FieldValueTypeInvalid"],
  ])("refuses %s", (_, spec, expected) => {
    expect(summary(runCreate(def, pod(spec)).errors)).toEqual([expected]);
  });
});

describe("Pod update", () => {
  const start = (): [ApiObject, ApiObject] => {
    const previous = stored(def, pod());
    return [structuredClone(previous), previous];
  };
  const container = (obj: ApiObject) => (obj.spec as { containers: Record<string, unknown>[] }).containers[0]!;

  it("accepts a new image", () => {
    const [next, previous] = start();
    container(next).image = "busybox:2";
    expect(runUpdate(def, next, previous).errors).toEqual([]);
    expect(def.strategy.specChanged?.(next, previous)).toBe(true);
  });

  it("refuses any other spec change", () => {
    const [next, previous] = start();
    container(next).name = "other";
    expect(summary(runUpdate(def, next, previous).errors)).toEqual(["spec FieldValueForbidden"]);
  });

  it("keeps the stored status on a main-resource update", () => {
    const [next, previous] = start();
    next.status = { phase: "Running" };
    expect(runUpdate(def, next, previous).obj.status).toEqual({ phase: "Pending" });
  });

  it.each([
    ["Running", "Running", []],
    ["an unknown phase", "Sleeping", ["status.phase FieldValueNotSupported"]],
  ])("through /status, %s", (_, phase, expected) => {
    const [next, previous] = start();
    next.status = { phase };
    container(next).image = "ignored";
    const { obj, errors } = runUpdate(def, next, previous, ctx({ subresource: "status" }));
    expect(summary(errors)).toEqual(expected);
    expect(container(obj).image).toBe("busybox");
  });
});
