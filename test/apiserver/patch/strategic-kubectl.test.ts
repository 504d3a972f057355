// Strategic merge patch results compared byte for byte with `kubectl patch --local --type strategic`.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { schemaRegistry } from "../../../src/api/schema.js";
import { applyStrategicMergePatch } from "../../../src/apiserver/patch/strategic.js";
import { isPlatformError } from "../../../src/errors.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const dir = tempDir("smp-kubectl-");

// kubectl knows the built-in kinds under the k8s.io suffix; Pod and ServiceAccount are core kinds either way.
const registry = schemaRegistry(groupNames("k8s.io"));

interface PodOptions {
  labels?: Record<string, string>;
  finalizers?: string[];
  containers?: unknown[];
  ownerUids?: string[];
}

function pod(o: PodOptions = {}): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "web",
      namespace: "default",
      labels: o.labels ?? { app: "web", tier: "front" },
      finalizers: o.finalizers ?? ["a.example/x", "a.example/y"],
      ...(o.ownerUids ? { ownerReferences: o.ownerUids.map((uid) => ({ apiVersion: "v1", kind: "Node", name: `n-${uid}`, uid })) } : {}),
    },
    spec: {
      nodeName: "node-1",
      containers: o.containers ?? [
        { name: "app", image: "app:1", args: ["--a", "--b"], env: [{ name: "A", value: "1" }, { name: "B", value: "2" }], ports: [{ containerPort: 80 }] },
        { name: "sidecar", image: "side:1" },
      ],
    },
  };
}

function serviceAccount(): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "builder", namespace: "ci" },
    secrets: [{ name: "s1" }, { name: "s2" }],
    imagePullSecrets: [{ name: "pull-1" }, { name: "pull-2" }],
    automountServiceAccountToken: true,
  };
}

/** Sorted keys and four-space indent: the shape of `kubectl -o json`. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(sort) : v !== null && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort((v as Record<string, unknown>)[k])])) : v;
  return `${JSON.stringify(sort(value), null, 4)}\n`;
}

let fileCount = 0;
function kubectlPatch(obj: unknown, patch: unknown): { ok: true; out: string } | { ok: false; err: string } {
  const file = join(dir, `obj-${fileCount++}.json`);
  writeFileSync(file, JSON.stringify(obj));
  try {
    const out = execFileSync("kubectl", ["patch", "--local", "-f", file, "-p", JSON.stringify(patch), "-o", "json", "--type", "strategic"], {
      env: { ...process.env, HOME: dir, KUBECONFIG: join(dir, "none") },
      stdio: ["ignore", "pipe", "pipe"],
    }).toString();
    return { ok: true, out };
  } catch (e) {
    return { ok: false, err: String((e as { stderr?: Buffer }).stderr ?? e) };
  }
}

function ours(obj: Record<string, unknown>, patch: unknown): { ok: true; out: string } | { ok: false; err: string } {
  try {
    return { ok: true, out: canonical(applyStrategicMergePatch(obj, patch, registry.forObject(obj))) };
  } catch (e) {
    if (!isPlatformError(e, "PATCH_INVALID")) throw e;
    return { ok: false, err: e.message };
  }
}

const agreeing: [string, Record<string, unknown>, unknown][] = [
  ["merges labels and deletes one with null", pod(), { metadata: { labels: { tier: null, track: "stable" } } }],
  ["adds annotations while dropping nulls inside the new map", pod(), { metadata: { annotations: { keep: "1", gone: null } } }],
  ["adds a container by its merge key ahead of the live ones", pod(), { spec: { containers: [{ name: "log", image: "log:1" }] } }],
  ["updates one container's image in place", pod(), { spec: { containers: [{ name: "sidecar", image: "side:2" }] } }],
  ["deletes a container with $patch: delete", pod(), { spec: { containers: [{ name: "app", $patch: "delete" }] } }],
  ["replaces the container list with $patch: replace", pod(), { spec: { containers: [{ name: "only", image: "o:1" }, { $patch: "replace" }] } }],
  ["replaces an atomic args list", pod(), { spec: { containers: [{ name: "app", args: ["--c"] }] } }],
  ["merges env entries by name", pod(), { spec: { containers: [{ name: "app", env: [{ name: "B", value: "20" }, { name: "C", value: "3" }] }] } }],
  ["merges ports by containerPort", pod(), { spec: { containers: [{ name: "app", ports: [{ containerPort: 443, name: "https" }] }] } }],
  [
    "orders env by $setElementOrder while adding an entry",
    pod(),
    { spec: { containers: [{ name: "app", env: [{ name: "C", value: "3" }], "$setElementOrder/env": [{ name: "C" }, { name: "B" }, { name: "A" }] }] } },
  ],
  ["reorders containers with $setElementOrder alone", pod(), { spec: { "$setElementOrder/containers": [{ name: "sidecar" }, { name: "app" }] } }],
  ["deletes an env entry and keeps the order list", pod(), { spec: { containers: [{ name: "app", env: [{ name: "A", $patch: "delete" }], "$setElementOrder/env": [{ name: "B" }] }] } }],
  ["places a new container by $setElementOrder", pod(), { spec: { "$setElementOrder/containers": [{ name: "app" }, { name: "log" }, { name: "sidecar" }], containers: [{ name: "log" }] } }],
  ["ignores $setElementOrder for a list that is nowhere", pod(), { spec: { "$setElementOrder/volumes": [] } }],
  ["adds a list in the order $setElementOrder gives", pod(), { spec: { "$setElementOrder/initContainers": [{ name: "b" }, { name: "a" }], initContainers: [{ name: "b" }, { name: "a" }] } }],
  ["ignores deleting an absent finalizer", pod(), { metadata: { "$deleteFromPrimitiveList/finalizers": ["a.example/none"] } }],
  ["set-merges finalizers", pod(), { metadata: { finalizers: ["a.example/z", "a.example/x"] } }],
  ["set-merges repeated finalizers once", pod(), { metadata: { finalizers: ["a.example/y", "a.example/y", "a.example/w"] } }],
  ["removes finalizers with $deleteFromPrimitiveList", pod(), { metadata: { "$deleteFromPrimitiveList/finalizers": ["a.example/x"] } }],
  ["reorders finalizers with $setElementOrder and adds one", pod(), { metadata: { "$setElementOrder/finalizers": ["a.example/y", "a.example/q", "a.example/x"], finalizers: ["a.example/q"] } }],
  ["clears metadata fields outside $retainKeys", pod(), { metadata: { $retainKeys: ["name", "labels"], labels: { extra: "1" } } }],
  ["empties a map with $patch: delete", pod(), { spec: { $patch: "delete" } }],
  ["replaces a map with $patch: replace", pod(), { spec: { $patch: "replace", nodeName: "node-2", containers: [{ name: "x", image: "x:1" }] } }],
  ["drops a scalar patched with a $patch map", pod(), { spec: { nodeName: { $patch: "delete" } } }],
  ["keeps unknown fields added under spec", pod(), { spec: { hostNetwork: true, extra: { deep: { keep: 1, drop: null } } } }],
  ["merges owner references by uid", pod({ ownerUids: ["u1", "u2"] }), { metadata: { ownerReferences: [{ uid: "u2", name: "renamed", apiVersion: "v1", kind: "Node" }, { uid: "u3", name: "n3", apiVersion: "v1", kind: "Node" }] } }],
  ["merges a container patch that repeats a key", pod(), { spec: { containers: [{ name: "new" }, { name: "new", image: "n:1" }] } }],
  ["keeps a merge list unchanged on an empty patch list", pod(), { metadata: { finalizers: [] }, spec: { containers: [] } }],
  ["merges ServiceAccount secrets by name and replaces imagePullSecrets", serviceAccount(), { secrets: [{ name: "s3" }, { name: "s1", namespace: "ci" }], imagePullSecrets: [{ name: "pull-3" }] }],
  ["deletes a ServiceAccount secret and sets a boolean", serviceAccount(), { secrets: [{ name: "s2", $patch: "delete" }], automountServiceAccountToken: false }],
  ["replaces the whole object with a top-level $patch: replace", serviceAccount(), { $patch: "replace", apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "builder" } }],
];

const refused: [string, Record<string, unknown>, unknown][] = [
  ["$patch: merge in a map", pod(), { metadata: { $patch: "merge", labels: { a: "1" } } }],
  ["$patch: merge in a list", pod(), { spec: { containers: [{ $patch: "merge" }] } }],
  ["an unknown $patch value", pod(), { spec: { containers: [{ name: "app", $patch: "bogus" }] } }],
  ["a list element without its merge key", pod(), { spec: { containers: [{ image: "x" }] } }],
  ["a patched field missing from $retainKeys", pod(), { metadata: { $retainKeys: ["name"], labels: { q: "1" } } }],
  ["$retainKeys that is not a list", pod(), { metadata: { $retainKeys: "name" } }],
  ["a patch list out of the $setElementOrder order", pod(), { metadata: { "$setElementOrder/finalizers": ["a.example/y"], finalizers: ["a.example/q"] } }],
  ["$setElementOrder that is not a list", pod(), { spec: { "$setElementOrder/containers": "x" } }],
  ["$setElementOrder entries without the merge key", pod(), { spec: { "$setElementOrder/containers": [{ image: "x" }] } }],
  ["a malformed $setElementOrder key", pod(), { spec: { "$setElementOrderX/containers": [] } }],
  ["a malformed $deleteFromPrimitiveList key", pod(), { metadata: { $deleteFromPrimitiveList: ["x"] } }],
  ["$setElementOrder for an empty live list", pod({ finalizers: [] }), { metadata: { "$setElementOrder/finalizers": [] } }],
  ["an added list out of its $setElementOrder order", pod(), { spec: { "$setElementOrder/initContainers": [{ name: "b" }, { name: "a" }], initContainers: [{ name: "a" }, { name: "b" }] } }],
  ["a merge list of mixed element types", pod(), { metadata: { finalizers: [1] } }],
  ["a merge list of lists", pod(), { spec: { containers: [["a"]] } }],
];

describe("strategic merge patch against kubectl", () => {
  it.each(agreeing)("%s", (_name, obj, rawPatch) => {
    const patch = JSON.parse(JSON.stringify(rawPatch)) as unknown;
    const theirs = kubectlPatch(obj, patch);
    expect(theirs.ok, theirs.ok ? "" : theirs.err).toBe(true);
    expect(ours(obj, patch)).toEqual(theirs);
  });

  it.each(refused)("refuses %s as kubectl does", (_name, obj, patch) => {
    const theirs = kubectlPatch(obj, patch);
    const mine = ours(obj, patch);
    expect(theirs.ok).toBe(false);
    expect(mine.ok).toBe(false);
  });
});
