// The garbage collector as upstream's: dependents of a deleted owner go (Background), an owner deleted in the
// Foreground waits for its blocking dependents, Orphan keeps them without the reference; dangling and unknown owners.
import { describe, expect, it } from "vitest";
import type { ApiObject, OwnerReference } from "../../src/api/meta.js";
import { isPlatformError, PlatformError } from "../../src/errors.js";
import { failure, FakeClock, registryFixture, serverFixture } from "./fixtures.js";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import type { Storage } from "../../src/apiserver/storage/types.js";
import { insecureLocalPipeline, type Pipeline } from "../../src/apiserver/pipeline.js";
import { silentLogger } from "../../src/logger.js";
import { MemoryAuditSink } from "../../src/audit/memory-sink.js";
import { parseAuditPolicy } from "../../src/config/audit-policy.js";
import { serviceAccount } from "../fixtures/objects.js";

const secret = (name: string, owners: OwnerReference[], extra: Partial<ApiObject["metadata"]> = {}): ApiObject => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name, namespace: "default", ownerReferences: owners, ...extra },
});
const ref = (sa: ApiObject, o: Partial<OwnerReference> = {}): OwnerReference => ({ apiVersion: "v1", kind: "ServiceAccount", name: sa.metadata.name!, uid: sa.metadata.uid!, ...o });

async function world() {
  const fx = await registryFixture();
  const sas = fx.store("ServiceAccount");
  const secrets = fx.store("Secret");
  const account = async (name: string) => (await sas.create("default", serviceAccount({ name, namespace: "default" }), {})).object;
  const exists = async (name: string) => {
    try {
      return (await secrets.get("default", name)).object;
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return undefined;
      throw err;
    }
  };
  const accountExists = async (name: string) => sas.get("default", name).then((s) => s.object, () => undefined);
  /** Lets the collector's timers and writes run until `done` holds (at most 30 s of the fake clock). */
  const until = async (done: () => Promise<boolean>) => {
    for (let i = 0; i < 300 && !(await done()); i++) await fx.clock.advance(100);
    expect(await done()).toBe(true);
  };
  return { ...fx, sas, secrets, account, exists, accountExists, until };
}

describe("garbage collector", () => {
  it("deletes a dependent once its only owner is gone, and leaves the objects of other owners", async () => {
    const w = await world();
    const bot = await w.account("bot");
    const other = await w.account("other");
    await w.secrets.create("default", secret("bot-token", [ref(bot)]), {});
    await w.secrets.create("default", secret("other-token", [ref(other)]), {});
    await w.secrets.create("default", secret("plain", []), {});
    await w.sas.delete("default", "bot", {});
    await w.until(async () => (await w.exists("bot-token")) === undefined);
    expect(await w.exists("other-token")).toBeDefined();
    expect(await w.exists("plain")).toBeDefined();
  });

  it("keeps a dependent while another owner exists, without the reference to the one gone", async () => {
    const w = await world();
    const a = await w.account("a");
    const b = await w.account("b");
    await w.secrets.create("default", secret("shared", [ref(a), ref(b)]), {});
    await w.sas.delete("default", "a", {});
    await w.until(async () => (await w.exists("shared"))?.metadata.ownerReferences?.length === 1);
    expect((await w.exists("shared"))!.metadata.ownerReferences).toEqual([ref(b)]);
    await w.sas.delete("default", "b", {});
    await w.until(async () => (await w.exists("shared")) === undefined);
  });

  it("deletes a dependent whose owner never existed or was replaced by another of the name, and leaves owners it cannot resolve", async () => {
    const w = await world();
    const old = await w.account("replaced");
    await w.sas.delete("default", "replaced", {});
    await w.account("replaced");
    await w.secrets.create("default", secret("stale", [ref(old)]), {});
    await w.secrets.create("default", secret("dangling", [{ apiVersion: "v1", kind: "ServiceAccount", name: "nobody", uid: "0000-none" }]), {});
    await w.secrets.create("default", secret("foreign", [{ apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: "d-1" }]), {});
    // A cluster-scoped object naming a namespaced owner: unresolvable, left alone.
    const role = { apiVersion: "rbac.authorization.platform.io/v1", kind: "ClusterRole", metadata: { name: "gc-role", ownerReferences: [ref(old)] }, rules: [] };
    await w.store("ClusterRole").create(undefined, role, {});
    await w.until(async () => (await w.exists("stale")) === undefined && (await w.exists("dangling")) === undefined);
    await w.clock.advance(5_000);
    expect(await w.exists("foreign")).toBeDefined();
    const kept = (await w.store("ClusterRole").get(undefined, "gc-role")).object;
    expect(kept.metadata.ownerReferences).toHaveLength(1);
    // Reported as upstream's collector does, once, however often the role is looked at again.
    await w.store("ClusterRole").patch(undefined, "gc-role", (cur) => ({ ...cur, metadata: { ...cur.metadata, labels: { touched: "yes" } } }), {});
    await w.clock.advance(5_000);
    // Stored as events.k8s.io's form (the core view reads it back as involvedObject, message and source).
    const events = (await w.storage.list("/")).items.map((kv) => JSON.parse(kv.value) as Record<string, any>).filter((e) => e.reason === "OwnerRefInvalidNamespace");
    expect(events).toEqual([
      expect.objectContaining({
        type: "Warning",
        regarding: { apiVersion: "rbac.authorization.platform.io/v1", kind: "ClusterRole", name: "gc-role", uid: kept.metadata.uid },
        note: `ownerRef [v1/ServiceAccount, namespace: , name: replaced, uid: ${old.metadata.uid}] does not exist in namespace ""`,
        deprecatedSource: { component: "garbage-collector-controller" },
      }),
    ]);
  });

  it("deletes a dependent whose owner lives in another namespace, and reports it as upstream's collector does", async () => {
    const w = await world();
    await w.store("Namespace").create(undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: "elsewhere" } }, {});
    const abroad = (await w.sas.create("elsewhere", serviceAccount({ name: "abroad", namespace: "elsewhere" }), {})).object;
    // Another object of the name, elsewhere too, but not the uid named: nothing to report.
    const namesake = (await w.sas.create("elsewhere", serviceAccount({ name: "namesake", namespace: "elsewhere" }), {})).object;
    const home = await w.account("home");
    await w.secrets.create("default", secret("crossing", [ref(abroad)]), {});
    await w.secrets.create("default", secret("crossing-too", [ref(abroad)]), {});
    await w.secrets.create("default", secret("mistaken", [ref(namesake, { uid: "0000-other" })]), {});
    await w.secrets.create("default", secret("at-home", [ref(home)]), {});
    await w.until(async () => (await w.exists("crossing")) === undefined && (await w.exists("crossing-too")) === undefined && (await w.exists("mistaken")) === undefined);
    await w.clock.advance(5_000);
    expect(await w.exists("at-home")).toBeDefined();
    expect((await w.sas.get("elsewhere", "abroad")).object.metadata.uid).toBe(abroad.metadata.uid);
    const events = (await w.storage.list("/")).items.map((kv) => JSON.parse(kv.value) as Record<string, any>).filter((e) => e.reason === "OwnerRefInvalidNamespace");
    // One per dependent (the second may be answered from the collector's memory of the owner's uid).
    const note = `ownerRef [v1/ServiceAccount, namespace: default, name: abroad, uid: ${abroad.metadata.uid}] does not exist in namespace "default"`;
    expect(events.map((e) => e.regarding.name).sort()).toEqual(["crossing", "crossing-too"]);
    for (const e of events) {
      expect(e).toEqual(
        expect.objectContaining({ metadata: expect.objectContaining({ namespace: "default" }), type: "Warning", regarding: expect.objectContaining({ kind: "Secret", namespace: "default" }), note }),
      );
    }
  });

  it("Orphan: keeps the dependents without the reference, then the owner goes", async () => {
    const w = await world();
    const bot = await w.account("bot");
    await w.secrets.create("default", secret("kept", [ref(bot, { controller: true })]), {});
    const r = await w.sas.delete("default", "bot", { propagationPolicy: "Orphan" });
    expect([r.deleted, r.object.metadata.finalizers, r.object.metadata.deletionTimestamp !== undefined]).toEqual([false, ["orphan"], true]);
    await w.until(async () => (await w.accountExists("bot")) === undefined);
    const kept = await w.exists("kept");
    expect(kept).toBeDefined();
    expect(kept!.metadata.ownerReferences).toBeUndefined();
  });

  it("Foreground: the owner waits, Terminating, until its blocking dependents are gone, held ones included", async () => {
    const w = await world();
    const bot = await w.account("bot");
    await w.secrets.create("default", secret("held", [ref(bot, { blockOwnerDeletion: true })], { finalizers: ["example.com/hold"] }), {});
    await w.secrets.create("default", secret("free", [ref(bot)]), {});
    const r = await w.sas.delete("default", "bot", { propagationPolicy: "Foreground" });
    expect(r.object.metadata.finalizers).toEqual(["foregroundDeletion"]);
    // Both dependents are deleted: the one without a finalizer goes, the held one waits under its finalizer.
    await w.until(async () => (await w.exists("free")) === undefined && (await w.exists("held"))?.metadata.deletionTimestamp !== undefined);
    await w.clock.advance(5_000);
    expect((await w.accountExists("bot"))?.metadata.finalizers).toEqual(["foregroundDeletion"]);
    await w.secrets.patch("default", "held", (cur) => ({ ...cur, metadata: { ...cur.metadata, finalizers: [] } }), {});
    await w.until(async () => (await w.accountExists("bot")) === undefined);
  });

  it("collects at start what a server that stopped left: the dependents of an owner deleted meanwhile", async () => {
    const w = await world();
    const bot = await w.account("bot");
    await w.secrets.create("default", secret("left", [ref(bot)]), {});
    // The owner's key removed below the registry (a server that stopped before collecting).
    w.registry.close();
    await w.storage.delete("/core/serviceaccounts/default/bot");
    const again = await registryFixture({ storage: w.storage, clock: w.clock });
    const secrets = again.store("Secret");
    for (let i = 0; i < 50; i++) await w.clock.advance(100);
    expect(isPlatformError(await failure(secrets.get("default", "left")), "NOT_FOUND")).toBe(true);
    again.registry.close();
  });

  it("audits its deletes as requests of system:apiserver (a server with an audit policy)", async () => {
    const sink = new MemoryAuditSink();
    const policy = parseAuditPolicy(JSON.stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] }), "policy").policy;
    const server = await serverFixture({ audit: { policy, sink } });
    try {
      const at = (path: string, method = "GET", body?: unknown) => fetch(`${server.address}${path}`, { method, headers: { "content-type": "application/json" }, ...(body !== undefined && { body: JSON.stringify(body) }) });
      const owner = (await (await at("/api/v1/namespaces/default/serviceaccounts", "POST", serviceAccount({ name: "audited-owner" }))).json()) as ApiObject;
      await at("/api/v1/namespaces/default/secrets", "POST", secret("audited-dependent", [ref(owner)]));
      await at("/api/v1/namespaces/default/serviceaccounts/audited-owner", "DELETE");
      const deadline = Date.now() + 10_000;
      while ((await at("/api/v1/namespaces/default/secrets/audited-dependent")).status !== 404 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const own = sink.events.filter((e) => e.user.username === "system:apiserver" && e.stage === "ResponseComplete");
      expect(own.map((e) => [e.verb, e.requestURI, e.responseStatus?.code, e.userAgent])).toEqual([["delete", "/api/v1/namespaces/default/secrets/audited-dependent", 200, "platform-ca-apiserver (garbage collector)"]]);
    } finally {
      await server.stop();
    }
  });

  it("takes no orphan finalizer off while it reads the objects again: the dependent keeps living, without the reference", async () => {
    const clock = new FakeClock();
    const mem = new MemoryStorage({ clock });
    let held: Promise<void> | undefined;
    let release: () => void = () => {};
    let breakWatch: ((err: Error) => void) | undefined;
    // The memory store, with the collector's read holdable and its watch breakable (its events keep coming until the
    // collector cancels it, as a stream whose error is still being delivered).
    const storage: Storage = {
      revision: () => mem.revision(),
      compactedRevision: () => mem.compactedRevision(),
      get: (key) => mem.get(key),
      create: (key, value, ttl) => mem.create(key, value, ttl),
      update: (key, value, rev, ttl) => mem.update(key, value, rev, ttl),
      delete: (key, rev) => mem.delete(key, rev),
      compact: (rev) => mem.compact(rev),
      close: () => mem.close(),
      list: async (prefix: string, o?: Parameters<Storage["list"]>[1]) => {
        if (prefix === "/" && held) await held;
        return mem.list(prefix, o);
      },
      watch: (prefix: string, o: Parameters<Storage["watch"]>[1], onEvent: Parameters<Storage["watch"]>[2], onError?: (err: Error) => void) => {
        if (prefix === "/") breakWatch = onError;
        return mem.watch(prefix, o, onEvent, onError);
      },
    };
    // The collector's first patch of the dependent is refused, so the owner is looked at again a second later.
    const base = insecureLocalPipeline(silentLogger());
    let refuse = true;
    const pipeline: Pipeline = {
      ...base,
      admit: async (a, obj, old) => {
        if (refuse && a.resource === "secrets" && a.user.username === "system:apiserver") {
          refuse = false;
          throw new PlatformError("STORAGE_UNAVAILABLE", "refused once");
        }
        return base.admit(a, obj, old);
      },
    };
    const fx = await registryFixture({ storage, clock, pipeline });
    await clock.advance(10);
    const sas = fx.store("ServiceAccount");
    const secrets = fx.store("Secret");
    const owner = (await sas.create("default", serviceAccount({ name: "owner", namespace: "default" }), {})).object;
    await secrets.create("default", secret("child", [ref(owner)]), {});
    await clock.advance(10);
    // The watch breaks (a read again is due in a second); the Orphan delete's first patch is refused (the owner is
    // due again in a second too, after the read has begun and while it is held).
    breakWatch!(new Error("watch broken"));
    held = new Promise<void>((r) => (release = r));
    await sas.delete("default", "owner", { propagationPolicy: "Orphan" });
    await clock.advance(2_500);
    expect((await sas.get("default", "owner")).object.metadata.finalizers).toEqual(["orphan"]);
    release();
    held = undefined;
    for (let i = 0; i < 100 && (await sas.get("default", "owner").then(() => true, () => false)); i++) await clock.advance(500);
    expect(isPlatformError(await failure(sas.get("default", "owner")), "NOT_FOUND")).toBe(true);
    expect((await secrets.get("default", "child")).object.metadata.ownerReferences).toBeUndefined();
    fx.registry.close();
  });
});
