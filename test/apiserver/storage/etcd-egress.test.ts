// etcd reached through the `etcd` egress selection: a real etcd (plain and TLS) behind tinyproxy, every connection a
// CONNECT tunnel to the member; TLS still checks the member's certificate for the endpoint's own host name.
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createEgressSelector, type EgressSelector } from "../../../src/apiserver/egress/index.js";
import { openEtcdStorage } from "../../../src/apiserver/storage/etcd/store.js";
import type { Storage } from "../../../src/apiserver/storage/types.js";
import { parseEgressSelectorConfig } from "../../../src/config/egress-selector.js";
import { startConnectProxy, startTinyproxy, type TestProxy } from "../../fixtures/connect-proxy.js";
import { startEtcd, type EtcdCluster } from "../../fixtures/etcd.js";
import { recorder, rejection } from "./contract.js";

const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

/** An etcd, a proxy (tinyproxy by default), and a selector whose `etcd` selection goes through it (or is Direct, `controlplane` proxied). */
async function setUp(tls: boolean, etcdSelection: "HTTPConnect" | "Direct" = "HTTPConnect", startProxy: () => Promise<TestProxy> = startTinyproxy, members = 1): Promise<{ etcd: EtcdCluster; proxy: TestProxy; egress: EgressSelector }> {
  const etcd = await startEtcd({ tls, members });
  stops.push(() => etcd.stop());
  const proxy = await startProxy();
  stops.push(() => proxy.close());
  const proxied = { proxyProtocol: "HTTPConnect", transport: { tcp: { url: proxy.address } } };
  const selections = etcdSelection === "Direct" ? [{ name: "etcd", connection: { proxyProtocol: "Direct" } }, { name: "controlplane", connection: proxied }] : [{ name: "etcd", connection: proxied }];
  const doc = { apiVersion: "apiserver.platform.io/v1beta1", kind: "EgressSelectorConfiguration", egressSelections: selections };
  const egress = await createEgressSelector(parseEgressSelectorConfig(stringify(doc), "egress.yaml").config);
  return { etcd, proxy, egress };
}

/** Create, list, and a watch that sees a later write: the store works end to end. */
async function exercise(s: Storage): Promise<void> {
  const start = await s.revision();
  const a = await s.create("/e/a", '{"n":1}');
  const w = recorder(s, "/e/", start);
  await w.live;
  const b = await s.create("/e/b", '{"n":2}');
  expect((await s.list("/e/")).items.map((kv) => [kv.key, kv.value])).toEqual([["/e/a", '{"n":1}'], ["/e/b", '{"n":2}']]);
  expect((await w.until(2)).map((e) => [e.type, e.key, e.revision])).toEqual([["PUT", "/e/a", a.modRevision], ["PUT", "/e/b", b.modRevision]]);
  w.watch.cancel();
}

describe("etcd through the etcd egress selection", () => {
  it("tunnels every connection to a plain etcd through the proxy", async () => {
    const { etcd, proxy, egress } = await setUp(false);
    const s = await openEtcdStorage({ endpoints: etcd.endpoints, egress: egress.dialer("etcd") });
    try {
      await exercise(s);
    } finally {
      await s.close();
    }
    const member = etcd.endpoints[0]!.replace("http://", "");
    expect(proxy.tunnels().length).toBeGreaterThan(0);
    expect(new Set(proxy.tunnels())).toEqual(new Set([member]));
  });

  it("speaks TLS to the member through the tunnel, checking its certificate for the endpoint's host name", async () => {
    const { etcd, proxy, egress } = await setUp(true);
    const port = new URL(etcd.endpoints[0]!).port;
    // The certificate names localhost and 127.0.0.1: the proxy resolves localhost, the client checks that name.
    const s = await openEtcdStorage({ endpoints: [`https://localhost:${port}`], tls: etcd.tls!, egress: egress.dialer("etcd") });
    try {
      await exercise(s);
    } finally {
      await s.close();
    }
    expect(new Set(proxy.tunnels())).toEqual(new Set([`localhost:${port}`]));
    // 127.1 reaches the same member, but the certificate does not name it: the check is against the endpoint's host,
    // not the loopback forwarder's 127.0.0.1 (which the certificate does name).
    await rejection(openEtcdStorage({ endpoints: [`https://127.1:${port}`], tls: etcd.tls!, egress: egress.dialer("etcd"), callTimeoutMs: 2000 }), "STORAGE_UNAVAILABLE");
    expect(proxy.tunnels()).toContain(`127.1:${port}`);
  });

  it("dials directly when the etcd selection is Direct", async () => {
    const { etcd, proxy, egress } = await setUp(false, "Direct");
    const s = await openEtcdStorage({ endpoints: etcd.endpoints, egress: egress.dialer("etcd") });
    try {
      await exercise(s);
    } finally {
      await s.close();
    }
    expect(proxy.tunnels()).toEqual([]);
  });

  it("never falls back to a direct connection: a proxy that refuses the member leaves the storage unavailable", async () => {
    const { etcd, proxy, egress } = await setUp(false, "HTTPConnect", () => startConnectProxy({ deny: () => true }));
    const err = await rejection(openEtcdStorage({ endpoints: etcd.endpoints, egress: egress.dialer("etcd"), callTimeoutMs: 1000 }), "STORAGE_UNAVAILABLE");
    const member = etcd.endpoints[0]!.replace("http://", "");
    expect(err.message).toContain(`cannot reach ${member} through the egress proxy`);
    expect(err.message).toContain("403");
    expect(proxy.tunnels()).toEqual([]);
  });

  it("tunnels to each member of a cluster, and fails over to the next one through the proxy", async () => {
    const { etcd, proxy, egress } = await setUp(false, "HTTPConnect", startTinyproxy, 3);
    const s = await openEtcdStorage({ endpoints: etcd.endpoints, egress: egress.dialer("etcd"), callTimeoutMs: 5000 });
    try {
      await s.create("/f/a", "{}");
      await etcd.members[0]!.stop();
      // A read first: the close of the dead member's tunnel reaches the client a moment after the member died, and a
      // write sent into it meanwhile is not sent again (it may have been applied); a read moves on to the next member.
      expect((await s.list("/f/")).items.map((kv) => kv.key)).toEqual(["/f/a"]);
      await s.create("/f/b", "{}");
      await etcd.members[1]!.stop();
      etcd.members[0]!.start();
      await etcd.members[0]!.healthy();
      expect((await s.list("/f/")).items.map((kv) => kv.key)).toEqual(["/f/a", "/f/b"]);
    } finally {
      await s.close();
    }
    // Each member was reached through its own tunnel (the channel of member i dials member i).
    expect(new Set(proxy.tunnels())).toEqual(new Set(etcd.endpoints.map((e) => e.replace("http://", ""))));
  });
});
