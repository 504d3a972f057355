// Registry adapters: object lookups for tokens and bootstrap writes through the registry's validation.
import { describe, expect, it } from "vitest";
import { bootstrapPolicy } from "../../../src/apiserver/auth/bootstrap-policy.js";
import { registryBootstrapCreate, registryLookups } from "../../../src/apiserver/auth/registry-adapters.js";
import { isPlatformError } from "../../../src/errors.js";
import { registryFixture, serviceAccount } from "../fixtures.js";

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

describe("registryBootstrapCreate", () => {
  it("stores each bootstrap object and reports ALREADY_EXISTS the second time", async () => {
    const f = await registryFixture();
    const create = registryBootstrapCreate(f.registry);
    const [role] = bootstrapPolicy(f.names).clusterRoles;
    await create(structuredClone(role!));
    expect((await f.store("ClusterRole").get(undefined, role!.metadata.name!)).object.rules).toEqual(role!.rules);
    const err = await create(structuredClone(role!)).catch((e: unknown) => e);
    expect(isPlatformError(err, "ALREADY_EXISTS")).toBe(true);
  });
});
