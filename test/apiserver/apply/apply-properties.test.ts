// Properties of server-side apply (fast-check): idempotence, order independence of disjoint appliers, no-op re-applies.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { registryFixture } from "../fixtures.js";

/** A ServiceAccount configuration whose labels and secrets (a list keyed by name) carry `prefix`. */
const config = (prefix: string) =>
  fc
    .record({
      labels: fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.stringMatching(/^[a-z0-9]{0,5}$/), { maxKeys: 4 }),
      secrets: fc.uniqueArray(fc.stringMatching(/^[a-z]{1,4}$/), { maxLength: 3 }),
      automount: fc.option(fc.boolean(), { nil: undefined }),
    })
    .map(({ labels, secrets, automount }) => ({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "sa", labels: Object.fromEntries(Object.entries(labels).map(([k, v]) => [`${prefix}${k}`, v])) },
      ...(secrets.length > 0 ? { secrets: secrets.map((s) => ({ name: `${prefix}${s}`, namespace: "default" })) } : {}),
      ...(automount !== undefined && prefix === "a" ? { automountServiceAccountToken: automount } : {}),
    }));

async function applier() {
  const { store } = await registryFixture();
  const sa = store("ServiceAccount");
  return (cfg: unknown, manager: string) => sa.apply("default", "sa", structuredClone(cfg), { fieldManager: manager, force: false });
}

/** The object's content: what managers own and server metadata aside; list items keyed by name compared as a set. */
function content(o: ApiObject): unknown {
  const { managedFields: _m, resourceVersion: _r, uid: _u, creationTimestamp: _c, generation: _g, ...meta } = o.metadata;
  const secrets = (o as { secrets?: { name: string }[] }).secrets;
  return { ...o, metadata: meta, ...(secrets ? { secrets: [...secrets].sort((x, y) => x.name.localeCompare(y.name)) } : {}) };
}

describe("apply properties", () => {
  it("is idempotent: applying a configuration twice changes nothing the second time", async () => {
    await fc.assert(
      fc.asyncProperty(config("a"), async (cfg) => {
        const apply = await applier();
        const first = await apply(cfg, "a");
        const second = await apply(cfg, "a");
        expect(second.object).toEqual(first.object);
      }),
      { numRuns: 60 },
    );
  });

  it("gives the same object for two appliers of disjoint fields in either order", async () => {
    await fc.assert(
      fc.asyncProperty(config("a"), config("b"), async (a, b) => {
        const one = await applier();
        await one(a, "a");
        const ab = (await one(b, "b")).object;
        const two = await applier();
        await two(b, "b");
        const ba = (await two(a, "a")).object;
        expect(content(ab)).toEqual(content(ba));
      }),
      { numRuns: 60 },
    );
  });

  it("re-applying a manager's last configuration after other appliers changes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(config("a"), config("a"), config("b"), async (before, last, other) => {
        const apply = await applier();
        await apply(before, "a");
        await apply(last, "a");
        const afterOther = (await apply(other, "b")).object;
        const again = await apply(last, "a");
        expect(again.object).toEqual(afterOther);
      }),
      { numRuns: 60 },
    );
  });
});
