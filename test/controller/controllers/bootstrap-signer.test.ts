// The bootstrap signer on fake stores: cluster-info signed with each token meant for signing (and only those), a
// signature removed when its token goes, changes or expires, no write when nothing changed, other keys left alone.
import { afterEach, describe, expect, it } from "vitest";
import { detachedSignature } from "../../../src/api/cluster-info.js";
import type { ConfigMap, Secret } from "../../../src/api/types/core.js";
import { BootstrapSigner } from "../../../src/controller/controllers/bootstrap-signer.js";
import { Informer } from "../../../src/controller/informer.js";
import { FakeStore } from "../fake-store.js";
import { until } from "../../fixtures/wait.js";

const TYPE = "bootstrap.platform.io/token";
const KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

function world() {
  const maps = new FakeStore<ConfigMap>({ kind: "ConfigMap" });
  const secrets = new FakeStore<Secret>({ kind: "Secret" });
  const token = (id: string, secret: string, extra: Record<string, string> = {}, o: { type?: string; namespace?: string; name?: string } = {}) =>
    secrets.put(
      secrets.make(o.name ?? `bootstrap-token-${id}`, {
        namespace: o.namespace ?? "platform-system",
        type: o.type ?? TYPE,
        data: Object.fromEntries(Object.entries({ "token-id": id, "token-secret": secret, "usage-bootstrap-signing": "true", ...extra }).map(([k, v]) => [k, b64(v)])),
      }),
    );
  const writer = maps.client();
  const start = async () => {
    const clusterInfo = new Informer<ConfigMap>({ listWatcher: maps.client(), name: "cluster-info", random: () => 0 });
    const tokens = new Informer<Secret>({ listWatcher: secrets.client(), name: "bootstrap-token-secrets", random: () => 0 });
    const signer = new BootstrapSigner({ configMaps: writer, clusterInfo, tokens, secretType: TYPE, tokenNamespace: "platform-system", publicNamespace: "platform-public", stopTimeoutMs: 1000 });
    const signal = new AbortController();
    clusterInfo.start(signal.signal);
    tokens.start(signal.signal);
    await signer.start(signal.signal);
    running.push({ stop: async () => (await signer.stop(), await clusterInfo.stop(), await tokens.stop(), signal.abort()) });
  };
  const data = () => maps.objects.get("platform-public/cluster-info")?.data ?? {};
  const signatures = () => Object.keys(data()).filter((k) => k.startsWith("jws-kubeconfig-")).sort();
  return { maps, secrets, token, writer, start, data, signatures };
}

describe("BootstrapSigner", () => {
  it("signs with the tokens meant for signing, removes the signatures of tokens gone or changed, and writes only on change", async () => {
    const w = world();
    w.maps.put(w.maps.make("cluster-info", { namespace: "platform-public", data: { kubeconfig: KUBECONFIG, other: "kept", "jws-kubeconfig-stale00": "x..y" } }));
    w.token("aaaaaa", "aaaaaaaaaaaaaaaa");
    w.token("bbbbbb", "bbbbbbbbbbbbbbbb", { expiration: iso(Date.now() + 3600_000) });
    w.token("cccccc", "cccccccccccccccc", { "usage-bootstrap-signing": "false" });
    w.token("dddddd", "dddddddddddddddd", { expiration: iso(Date.now() - 60_000) });
    w.token("eeeeee", "eeeeeeeeeeeeeeee", { expiration: "next tuesday" });
    w.token("ffffff", "ffffffffffffffff", {}, { name: "bootstrap-token-gggggg" });
    w.token("hhhhhh", "hhhhhhhhhhhhhhhh", {}, { type: "Opaque" });
    w.token("iiiiii", "iiiiiiiiiiiiiiii", {}, { namespace: "default" });
    w.token("jjjjjj", "");
    await w.start();
    await until(() => w.signatures().join() === "jws-kubeconfig-aaaaaa,jws-kubeconfig-bbbbbb", "signed with aaaaaa and bbbbbb only");
    expect(w.data()["jws-kubeconfig-aaaaaa"]).toBe(detachedSignature(KUBECONFIG, "aaaaaa", "aaaaaaaaaaaaaaaa"));
    expect(w.data()["jws-kubeconfig-bbbbbb"]).toBe(detachedSignature(KUBECONFIG, "bbbbbb", "bbbbbbbbbbbbbbbb"));
    expect(w.data().other).toBe("kept");
    expect(w.data().kubeconfig).toBe(KUBECONFIG);
    const writes = w.writer.count("update");
    expect(writes).toBe(1);
    // A token that changes its secret signs again; one deleted takes its signature with it.
    w.token("aaaaaa", "zzzzzzzzzzzzzzzz");
    await until(() => w.data()["jws-kubeconfig-aaaaaa"] === detachedSignature(KUBECONFIG, "aaaaaa", "zzzzzzzzzzzzzzzz"), "signed with the new secret");
    w.secrets.remove("platform-system/bootstrap-token-bbbbbb");
    await until(() => w.signatures().join() === "jws-kubeconfig-aaaaaa", "the deleted token's signature removed");
    // New content is signed again; an unrelated change to a token that signs nothing writes nothing.
    const cm = w.maps.objects.get("platform-public/cluster-info")!;
    w.maps.put({ ...cm, data: { ...cm.data, kubeconfig: `${KUBECONFIG}# moved\n` } });
    await until(() => w.data()["jws-kubeconfig-aaaaaa"] === detachedSignature(`${KUBECONFIG}# moved\n`, "aaaaaa", "zzzzzzzzzzzzzzzz"), "the new content signed");
    const before = w.writer.count("update");
    w.token("cccccc", "cccccccccccccccc", { "usage-bootstrap-signing": "false", description: "still not for signing" });
    await new Promise((r) => setTimeout(r, 300));
    expect(w.writer.count("update")).toBe(before);
  });

  it("removes a signature when its token expires, with nothing deleting the Secret", async () => {
    const w = world();
    w.maps.put(w.maps.make("cluster-info", { namespace: "platform-public", data: { kubeconfig: KUBECONFIG } }));
    w.token("aaaaaa", "aaaaaaaaaaaaaaaa", { expiration: iso(Date.now() + 1500) });
    await w.start();
    await until(() => w.signatures().join() === "jws-kubeconfig-aaaaaa", "signed while the token is valid");
    await until(() => w.signatures().length === 0, "the signature removed once the token expired", 5000);
    expect(w.secrets.objects.has("platform-system/bootstrap-token-aaaaaa")).toBe(true);
  });

  it("writes nothing without cluster-info or without its kubeconfig key", async () => {
    const w = world();
    w.maps.put(w.maps.make("cluster-info", { namespace: "platform-public", data: { other: "x" } }));
    w.token("aaaaaa", "aaaaaaaaaaaaaaaa");
    await w.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(w.writer.count("update")).toBe(0);
    w.maps.remove("platform-public/cluster-info");
    w.token("bbbbbb", "bbbbbbbbbbbbbbbb");
    await new Promise((r) => setTimeout(r, 300));
    expect(w.writer.count("update")).toBe(0);
    expect(w.writer.count("create")).toBe(0);
  });
});
