import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import { groupNames } from "../../src/api/group.js";
import { allResources } from "../../src/apiserver/registry/resources/index.js";
import type { ResourceDefinition } from "../../src/apiserver/registry/strategy.js";
import { TableConverter } from "../../src/apiserver/table.js";

const names = groupNames();
const defs = allResources(names);
const byKind = (kind: string) => defs.find((d) => d.kind === kind)!;
const now = new Date("2026-01-01T12:00:00Z");

function object(opts: { kind?: string; apiVersion?: string; name?: string; createdSecondsAgo?: number; spec?: Record<string, unknown>; status?: Record<string, unknown> }): ApiObject {
  return {
    apiVersion: opts.apiVersion ?? "v1",
    kind: opts.kind ?? "ServiceAccount",
    metadata: { name: opts.name ?? "thing", namespace: "default", uid: "u-1", resourceVersion: "7", creationTimestamp: new Date(now.getTime() - (opts.createdSecondsAgo ?? 300) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z") },
    ...(opts.spec ? { spec: opts.spec } : {}),
    ...(opts.status ? { status: opts.status } : {}),
  };
}

describe("Table output", () => {
  it("adds NAME and AGE around a kind without its own columns", () => {
    const def: ResourceDefinition = { ...byKind("ServiceAccount"), columns: undefined, row: undefined };
    const t = new TableConverter(def).table([object({ name: "builder", createdSecondsAgo: 3 * 3600 + 20 * 60 })], now, "Metadata", "v1", { resourceVersion: "7" });
    expect(t.columnDefinitions.map((c) => c.name)).toEqual(["Name", "Age"]);
    expect(t.rows[0]!.cells).toEqual(["builder", "3h20m"]);
    expect(t).toMatchObject({ kind: "Table", apiVersion: "meta.k8s.io/v1", metadata: { resourceVersion: "7" } });
  });

  it("prints CSR rows with the definition's columns and no duplicate NAME or AGE", () => {
    const csr = object({
      apiVersion: `${names.certificates}/v1`,
      kind: "CertificateSigningRequest",
      name: "node-csr-1",
      createdSecondsAgo: 45,
      spec: { signerName: names.signers.nodeagentClient, username: "system:node:a", expirationSeconds: 3600, request: "", usages: [] },
      status: { conditions: [{ type: "Approved", status: "True" }] },
    });
    const t = new TableConverter(byKind("CertificateSigningRequest")).table([csr], now, "Metadata", "v1", {});
    expect(t.columnDefinitions.map((c) => c.name.toUpperCase())).toEqual(["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]);
    expect(t.rows[0]!.cells).toEqual(["node-csr-1", "45s", names.signers.nodeagentClient, "system:node:a", "60m", "Approved"]);
  });

  it.each([
    ["Metadata", { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1" }],
    ["Object", { kind: "ServiceAccount", apiVersion: "v1" }],
  ] as const)("embeds the object per includeObject=%s", (include, expected) => {
    const t = new TableConverter(byKind("ServiceAccount")).table([object({})], now, include, "v1", {});
    expect(t.rows[0]!.object).toMatchObject({ ...expected, metadata: { name: "thing", uid: "u-1" } });
  });

  it("omits the object for includeObject=None", () => {
    const t = new TableConverter(byKind("ServiceAccount")).table([object({})], now, "None", "v1beta1", {});
    expect(t.rows[0]).not.toHaveProperty("object");
    expect(t.apiVersion).toBe("meta.k8s.io/v1beta1");
  });

  it("still prints a row whose cells cannot be computed", () => {
    const def: ResourceDefinition = {
      ...byKind("ServiceAccount"),
      columns: [{ name: "Broken", type: "string", priority: 0 }],
      row: () => {
        throw new TypeError("no spec");
      },
    };
    expect(new TableConverter(def).table([object({ createdSecondsAgo: 10 })], now, "None", "v1", {}).rows[0]!.cells).toEqual(["thing", "<unknown>", "10s"]);
  });
});
