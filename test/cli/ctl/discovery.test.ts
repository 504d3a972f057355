// Resource type names through discovery: kubectl's naming rules, the preferred version, and the on-disk cache.
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Discovery, match, type ResourceInfo } from "../../../src/cli/ctl/discovery.js";
import { createClient, type RestClient } from "../../../src/client/index.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const DOCS: Record<string, unknown> = {
  "/api": { kind: "APIVersions", versions: ["v1"] },
  "/apis": {
    kind: "APIGroupList",
    groups: [
      { name: "certificates.platform.io", versions: [{ version: "v1" }, { version: "v1beta1" }], preferredVersion: { version: "v1" } },
      { name: "events.platform.io", versions: [{ version: "v1" }] },
    ],
  },
  "/api/v1": {
    resources: [
      { name: "serviceaccounts", singularName: "serviceaccount", namespaced: true, kind: "ServiceAccount", verbs: ["get", "list"], shortNames: ["sa"] },
      { name: "serviceaccounts/token", singularName: "", namespaced: true, kind: "TokenRequest", verbs: ["create"] },
    ],
  },
  "/apis/certificates.platform.io/v1": {
    resources: [
      { name: "certificatesigningrequests", singularName: "certificatesigningrequest", namespaced: false, kind: "CertificateSigningRequest", verbs: ["get"], shortNames: ["csr"] },
      { name: "certificatesigningrequests/approval", singularName: "", namespaced: false, kind: "CertificateSigningRequest", verbs: ["get", "update"] },
      { name: "certificatesigningrequests/status", singularName: "", namespaced: false, kind: "CertificateSigningRequest", verbs: ["get", "update"] },
    ],
  },
  "/apis/certificates.platform.io/v1beta1": {
    resources: [{ name: "clustertrustbundles", singularName: "clustertrustbundle", namespaced: false, kind: "ClusterTrustBundle", verbs: ["get"] }],
  },
  "/apis/events.platform.io/v1": { resources: [{ name: "events", singularName: "event", namespaced: true, kind: "Event", verbs: ["get"], shortNames: ["ev"] }] },
};

let server: Server;
let requests: string[] = [];
let client: RestClient;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? "");
    const doc = DOCS[req.url ?? ""];
    res.writeHead(doc ? 200 : 404, { "Content-Type": "application/json" });
    res.end(JSON.stringify(doc ?? { kind: "Status", code: 404, reason: "NotFound", message: "not found" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  client = createClient({ server: `http://127.0.0.1:${port}`, tls: {}, credentials: { type: "none" }, namespace: "default", qps: 0, burst: 0, userAgent: "test" });
});

afterAll(async () => {
  client?.close();
  await new Promise((resolve) => server.close(resolve));
});

describe("resolving names", () => {
  it.each([
    ["csr", "certificatesigningrequests", "v1"],
    ["CSR", "certificatesigningrequests", "v1"],
    ["certificatesigningrequests", "certificatesigningrequests", "v1"],
    ["certificatesigningrequest", "certificatesigningrequests", "v1"],
    ["CertificateSigningRequest", "certificatesigningrequests", "v1"],
    ["csr.certificates.platform.io", "certificatesigningrequests", "v1"],
    ["certificatesigningrequests.v1.certificates.platform.io", "certificatesigningrequests", "v1"],
    ["sa", "serviceaccounts", "v1"],
    ["serviceaccounts.v1", "serviceaccounts", "v1"],
    ["clustertrustbundles", "clustertrustbundles", "v1beta1"],
    ["ev", "events", "v1"],
  ])("resolves %s to %s (%s)", async (name, plural, version) => {
    const found = await new Discovery({ client }).resolve(name);
    expect([found.plural, found.version]).toEqual([plural, version]);
  });

  it("lists subresources beside their resource, not as resources", async () => {
    const csr = await new Discovery({ client }).resolve("csr");
    expect(csr.subresources).toEqual(["approval", "status"]);
    expect((await new Discovery({ client }).resolve("sa")).subresources).toEqual(["token"]);
  });

  it.each(["widgets", "csr.example.com", "csr.v2.certificates.platform.io"])("says the server has no resource type %s", async (name) => {
    await expect(new Discovery({ client }).resolve(name)).rejects.toThrow(`the server doesn't have a resource type "${name}"`);
  });

  it("matches an object's apiVersion and kind", async () => {
    const d = new Discovery({ client });
    expect((await d.forObject("certificates.platform.io/v1beta1", "ClusterTrustBundle")).plural).toBe("clustertrustbundles");
    await expect(d.forObject("example.com/v1", "Widget")).rejects.toThrow('no matches for kind "Widget" in version "example.com/v1"');
  });

  it("prefers the preferred version for a bare name", () => {
    const info = (version: string, preferred: boolean): ResourceInfo => ({
      group: "g", version, preferred, plural: "things", singular: "thing", kind: "Thing", namespaced: false, verbs: [], shortNames: [], categories: [], subresources: [],
    });
    expect(match([info("v1", true), info("v2", false)], "things")?.version).toBe("v1");
    expect(match([info("v1", true), info("v2", false)], "things.v2.g")?.version).toBe("v2");
  });
});

describe("the discovery cache", () => {
  const DISCOVERY_CALLS = Object.keys(DOCS).length;

  it("answers from disk within its lifetime, refetches after it, and on an unknown name", async () => {
    const cacheDir = tempDir("ctl-discovery-");
    let now = 1_000_000;
    const make = () => new Discovery({ client, cacheDir, now: () => now, ttlMs: 60_000 });
    requests = [];
    await make().resolve("csr");
    expect(requests).toHaveLength(DISCOVERY_CALLS);
    requests = [];
    now += 59_000;
    await make().resolve("sa");
    expect(requests).toHaveLength(0);
    now += 2_000;
    await make().resolve("sa");
    expect(requests).toHaveLength(DISCOVERY_CALLS);
    requests = [];
    await expect(make().resolve("widgets")).rejects.toThrow(/widgets/);
    expect(requests).toHaveLength(DISCOVERY_CALLS);
  });

  it("keeps servers apart", async () => {
    const cacheDir = tempDir("ctl-discovery-");
    await new Discovery({ client, cacheDir }).all();
    const other = createClient({ ...client.config, server: "http://127.0.0.1:1" });
    await expect(new Discovery({ client: other, cacheDir, now: () => Date.now() }).all()).rejects.toThrow(/connection refused|ECONNREFUSED/);
    other.close();
  });
});
