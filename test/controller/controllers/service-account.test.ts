// The serviceaccount controller on fake stores: default created where missing, not twice, not in a terminating
// namespace, again after it is deleted, and an AlreadyExists answer taken as done.
import { afterEach, describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import type { Namespace } from "../../../src/api/types/core.js";
import { PlatformError } from "../../../src/errors.js";
import { ServiceAccountController } from "../../../src/controller/controllers/service-account.js";
import { Informer } from "../../../src/controller/informer.js";
import { FakeStore } from "../fake-store.js";
import { until } from "../../fixtures/wait.js";

const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

function setup() {
  const namespaces = new FakeStore<Namespace>({ kind: "Namespace" });
  const accounts = new FakeStore<ApiObject>({ kind: "ServiceAccount" });
  const nsInformer = new Informer<Namespace>({ listWatcher: namespaces.client(), name: "namespaces", random: () => 0 });
  const saInformer = new Informer<ApiObject>({ listWatcher: accounts.client(), name: "serviceaccounts", random: () => 0 });
  const writer = accounts.client();
  const controller = new ServiceAccountController({ serviceAccounts: writer, namespaces: nsInformer, defaults: saInformer, stopTimeoutMs: 1000 });
  const signal = new AbortController();
  const start = async () => {
    nsInformer.start(signal.signal);
    saInformer.start(signal.signal);
    await controller.start(signal.signal);
    running.push({ stop: async () => (await controller.stop(), await nsInformer.stop(), await saInformer.stop(), signal.abort()) });
  };
  return { namespaces, accounts, writer, start };
}

describe("ServiceAccountController", () => {
  it("creates default in each namespace lacking one, skips a terminating namespace, and leaves an existing one alone", async () => {
    const { namespaces, accounts, writer, start } = setup();
    namespaces.put(namespaces.make("a"));
    namespaces.put(namespaces.make("b"));
    namespaces.put(namespaces.make("gone", { status: { phase: "Terminating" } }));
    accounts.put(accounts.make("default", { namespace: "b" }));
    await start();
    await until(() => accounts.objects.get("a/default"), "default in a");
    namespaces.put(namespaces.make("c"));
    await until(() => accounts.objects.get("c/default"), "default in a new namespace");
    expect(accounts.objects.has("gone/default")).toBe(false);
    expect(writer.calls.filter((c) => c.op === "create").map((c) => (c.params as ApiObject).metadata.namespace).sort()).toEqual(["a", "c"]);
  });

  it("creates default again when it is deleted", async () => {
    const { namespaces, accounts, start } = setup();
    namespaces.put(namespaces.make("a"));
    await start();
    const first = await until(() => accounts.objects.get("a/default"), "default in a");
    accounts.remove("a/default");
    const again = await until(() => accounts.objects.get("a/default"), "default recreated");
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
  });

  it("takes an AlreadyExists answer as done, without retrying", async () => {
    const { namespaces, writer, start } = setup();
    writer.failNext("create", new PlatformError("ALREADY_EXISTS", "serviceaccounts \"default\" already exists"));
    namespaces.put(namespaces.make("a"));
    await start();
    await until(() => (writer.count("create") === 1 ? true : undefined), "the create");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(writer.count("create")).toBe(1);
  });
});
