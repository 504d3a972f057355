// The root CA publisher on fake stores: the ConfigMap created in each namespace, not in a terminating one, again when
// deleted, its data and description put back when changed (other annotations kept), and both profiles' names.
import { afterEach, describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import type { ConfigMap, Namespace } from "../../../src/api/types/core.js";
import { PlatformError } from "../../../src/errors.js";
import { RootCaPublisher } from "../../../src/controller/controllers/root-ca-publisher.js";
import { Informer } from "../../../src/controller/informer.js";
import { FakeStore } from "../fake-store.js";
import { until } from "../../fixtures/wait.js";

const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

function setup(suffix = "platform.io") {
  const names = groupNames(suffix);
  const namespaces = new FakeStore<Namespace>({ kind: "Namespace" });
  const maps = new FakeStore<ConfigMap>({ kind: "ConfigMap" });
  const nsInformer = new Informer<Namespace>({ listWatcher: namespaces.client(), name: "namespaces", random: () => 0 });
  const cmInformer = new Informer<ConfigMap>({ listWatcher: maps.client(), name: "configmaps", random: () => 0 });
  const writer = maps.client();
  const controller = new RootCaPublisher({ configMaps: writer, namespaces: nsInformer, published: cmInformer, names, rootCa: CA, stopTimeoutMs: 1000 });
  const signal = new AbortController();
  const start = async () => {
    nsInformer.start(signal.signal);
    cmInformer.start(signal.signal);
    await controller.start(signal.signal);
    running.push({ stop: async () => (await controller.stop(), await nsInformer.stop(), await cmInformer.stop(), signal.abort()) });
  };
  return { names, namespaces, maps, writer, start };
}

describe("RootCaPublisher", () => {
  it("publishes ca.crt with its description in every namespace, a new one too, but not in a terminating one", async () => {
    const { namespaces, maps, writer, start } = setup();
    namespaces.put(namespaces.make("a"));
    namespaces.put(namespaces.make("gone", { status: { phase: "Terminating" } }));
    await start();
    const cm = await until(() => maps.objects.get("a/platform-root-ca.crt"), "the ConfigMap in a");
    expect(cm.data).toEqual({ "ca.crt": CA });
    expect(cm.metadata.annotations).toEqual({ "platform.io/description": "Contains a CA bundle that verifies the API server's serving certificate." });
    namespaces.put(namespaces.make("b"));
    await until(() => maps.objects.get("b/platform-root-ca.crt"), "the ConfigMap in a new namespace");
    expect(maps.objects.has("gone/platform-root-ca.crt")).toBe(false);
    expect(writer.count("create")).toBe(2);
  });

  it("uses upstream's name and annotation under k8s.io", async () => {
    const { namespaces, maps, start } = setup("k8s.io");
    namespaces.put(namespaces.make("a"));
    await start();
    const cm = await until(() => maps.objects.get("a/kube-root-ca.crt"), "kube-root-ca.crt");
    expect(cm.metadata.annotations?.["kubernetes.io/description"]).toMatch(/^Contains a CA bundle that can be used to verify the kube-apiserver/);
  });

  it("creates it again when deleted, and puts back changed data and a removed description, keeping other annotations", async () => {
    const { namespaces, maps, writer, start } = setup();
    namespaces.put(namespaces.make("a"));
    await start();
    const first = await until(() => maps.objects.get("a/platform-root-ca.crt"), "the ConfigMap");
    maps.remove("a/platform-root-ca.crt");
    const again = await until(() => maps.objects.get("a/platform-root-ca.crt"), "the ConfigMap again");
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
    maps.put({ ...again, metadata: { ...again.metadata, annotations: { mine: "kept" } }, data: { "ca.crt": "tampered", extra: "x" } });
    const mended = await until(() => {
      const cm = maps.objects.get("a/platform-root-ca.crt");
      return cm?.data?.["ca.crt"] === CA ? cm : undefined;
    }, "the data put back");
    expect(mended.data).toEqual({ "ca.crt": CA });
    expect(mended.metadata.annotations).toEqual({ mine: "kept", "platform.io/description": expect.any(String) });
    expect(writer.count("update")).toBe(1);
  });

  it("takes an AlreadyExists answer as done", async () => {
    const { namespaces, writer, start } = setup();
    writer.failNext("create", new PlatformError("ALREADY_EXISTS", 'configmaps "platform-root-ca.crt" already exists'));
    namespaces.put(namespaces.make("a"));
    await start();
    await until(() => (writer.count("create") === 1 ? true : undefined), "the create");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(writer.count("create")).toBe(1);
  });
});
