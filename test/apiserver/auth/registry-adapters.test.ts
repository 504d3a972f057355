// Registry adapters: object lookups for tokens and bootstrap writes through the registry's validation.
import { describe, expect, it } from "vitest";
import { applyBootstrapPolicy, BASIC_USER_ROLE, bootstrapPolicy } from "../../../src/apiserver/auth/bootstrap-policy.js";
import { registryBootstrapWriter, registryLookups } from "../../../src/apiserver/auth/registry-adapters.js";
import { isPlatformError } from "../../../src/errors.js";
import { registryFixture } from "../fixtures.js";
import { serviceAccount } from "../../fixtures/objects.js";

const ADMIN = { username: "root", groups: ["system:masters"] };

describe("registryLookups", () => {
  it("finds a ServiceAccount's uid and a Pod's account, and answers undefined for missing objects", async () => {
    const f = await registryFixture();
    const sa = (await f.store("ServiceAccount").create("default", serviceAccount({ name: "builder", namespace: "default" }), { user: ADMIN })).object;
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "web-0", namespace: "default" }, spec: { serviceAccountName: "builder", containers: [{ name: "app", image: "busybox" }] } };
    const created = (await f.store("Pod").create("default", pod, { user: ADMIN })).object;
    const lookups = registryLookups(f.registry);
    expect(await lookups.serviceAccount("default", "builder")).toEqual({ uid: sa.metadata.uid });
    expect(await lookups.pod!("default", "web-0")).toEqual({ uid: created.metadata.uid, serviceAccountName: "builder" });
    expect(await lookups.serviceAccount("default", "ghost")).toBeUndefined();
    expect(await lookups.secret!("default", "ghost")).toBeUndefined();
  });
});

describe("registryBootstrapWriter", () => {
  it("stores each bootstrap object and reports ALREADY_EXISTS the second time", async () => {
    const f = await registryFixture();
    const writer = registryBootstrapWriter(f.registry);
    const [role] = bootstrapPolicy(f.names).clusterRoles;
    await writer.create(structuredClone(role!));
    expect((await f.store("ClusterRole").get(undefined, role!.metadata.name!)).object.rules).toEqual(role!.rules);
    const err = await writer.create(structuredClone(role!)).catch((e: unknown) => e);
    expect(isPlatformError(err, "ALREADY_EXISTS")).toBe(true);
  });

  it("completes a stored policy through the registry once, and writes nothing on the next start", async () => {
    const f = await registryFixture();
    const writer = registryBootstrapWriter(f.registry);
    await applyBootstrapPolicy(f.names, writer);
    const roles = f.store("ClusterRole");
    const stored = (await roles.get(undefined, BASIC_USER_ROLE)).object;
    const wanted = stored["rules"] as unknown[];
    // As a data directory of an older release: the role lacks its last rule.
    await roles.update(undefined, BASIC_USER_ROLE, { ...stored, rules: wanted.slice(0, -1) }, { user: ADMIN });
    const before = await f.registry.storage.revision();
    expect((await applyBootstrapPolicy(f.names, writer)).updated).toEqual([`ClusterRole/${BASIC_USER_ROLE}`]);
    expect((await roles.get(undefined, BASIC_USER_ROLE)).object["rules"]).toEqual(wanted);
    const after = await f.registry.storage.revision();
    expect(after).toBeGreaterThan(before);
    expect(await applyBootstrapPolicy(f.names, writer)).toEqual({ created: [], updated: [] });
    expect(await f.registry.storage.revision()).toBe(after);
  });
});
