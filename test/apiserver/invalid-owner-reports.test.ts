// The garbage collector's search for an owner in other namespaces (OwnerRefInvalidNamespace): what it reads and reports,
// with the registry's stores replaced by ones that count their reads.
import { describe, expect, it } from "vitest";
import type { ApiObject, OwnerReference } from "../../src/api/meta.js";
import { PlatformError } from "../../src/errors.js";
import type { ResourceStore } from "../../src/apiserver/registry/generic.js";
import { InvalidOwnerReports } from "../../src/apiserver/registry/invalid-owner-reports.js";
import type { Located } from "../../src/apiserver/registry/owner-graph.js";
import { silentLogger } from "../../src/logger.js";
import { FakeClock } from "../../src/time/fake-clock.js";

const OWNER: OwnerReference = { apiVersion: "v1", kind: "ServiceAccount", name: "abroad", uid: "uid-abroad" };

/** ServiceAccounts by namespace; each get counted. */
function accounts(byNamespace: Record<string, ApiObject[]>) {
  const reads: string[] = [];
  const store = {
    def: { kind: "ServiceAccount", group: "", namespaced: true },
    async get(namespace: string, name: string) {
      reads.push(`${namespace}/${name}`);
      const found = byNamespace[namespace]?.find((o) => o.metadata.name === name);
      if (!found) throw new PlatformError("NOT_FOUND", `serviceaccounts "${name}" not found`);
      return { object: found };
    },
  } as unknown as ResourceStore;
  return { store, reads };
}

function reports(namespaces: Record<string, "active" | "terminating">) {
  const created: string[] = [];
  const events = { def: { kind: "Event", group: "", namespaced: true }, apiVersion: "v1", create: async () => ({ object: {} }) } as unknown as ResourceStore;
  const r = new InvalidOwnerReports({
    stores: [],
    events,
    namespaces: { names: () => Object.keys(namespaces), lookup: (ns: string) => namespaces[ns] } as never,
    clock: new FakeClock(0),
    logger: silentLogger(),
    user: { username: "system:serviceaccount:kube-system:generic-garbage-collector", groups: [] },
    fieldManager: "garbage-collector",
    eachStored: async () => 0,
    create: async (at: Located, work: () => Promise<unknown>) => (created.push(`${at.namespace}/${at.name}`), work()),
  });
  return { r, created };
}

const dependent = (namespace: string): ApiObject => ({ apiVersion: "v1", kind: "Secret", metadata: { name: "crossing", namespace, uid: `uid-crossing-${namespace}` } });

describe("the search for an owner in other namespaces", () => {
  it("reads the owner's name in every other namespace and reports the dependent once it is found in one", async () => {
    const { store, reads } = accounts({ elsewhere: [{ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "abroad", namespace: "elsewhere", uid: "uid-abroad" } }] });
    const { r, created } = reports({ default: "active", other: "active", elsewhere: "active" });
    await r.reportIfElsewhere(store, { store, namespace: "default", name: "crossing" } as Located, dependent("default"), OWNER);
    expect(reads.sort()).toEqual(["elsewhere/abroad", "other/abroad"]);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatch(/^default\/crossing\.[0-9a-f]{16}$/);
  });

  it("looks for nothing when the dependent's namespace is being deleted: its objects go with it", async () => {
    const { store, reads } = accounts({ elsewhere: [{ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "abroad", namespace: "elsewhere", uid: "uid-abroad" } }] });
    const { r, created } = reports({ leaving: "terminating", other: "active", elsewhere: "active" });
    await r.reportIfElsewhere(store, { store, namespace: "leaving", name: "crossing" } as Located, dependent("leaving"), OWNER);
    expect(reads).toEqual([]);
    expect(created).toEqual([]);
  });
});
