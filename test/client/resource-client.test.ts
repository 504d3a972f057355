// Paths, query parameters, bodies and patch content types of the resource client against a recording server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../src/api/group.js";
import type { ApiObject } from "../../src/api/meta.js";
import { createClient, type RestClient } from "../../src/client/rest-client.js";
import { AgentPool } from "../../src/client/transport.js";
import type { ResourceClient } from "../../src/client/types.js";
import { restConfig } from "./fixtures/config.js";
import { object, sendJson, startServer, type Recorded, type TestServer } from "./fixtures/server.js";

let server: TestServer;
let client: RestClient;
beforeAll(async () => {
  server = await startServer((req, res) => sendJson(res, req.method === "POST" ? 201 : 200, req.body ? { echoed: JSON.parse(req.body) } : object("x")));
  client = createClient(restConfig({ server: server.url, namespace: "home" }), { agents: new AgentPool() });
});
afterAll(async () => {
  client.close();
  await server.close();
});

const names = groupNames();
const csr = () => client.resource({ group: names.certificates, version: "v1", plural: "certificatesigningrequests", namespaced: false });
const sa = () => client.resource({ group: "", version: "v1", plural: "serviceaccounts", namespaced: true });
const events = () => client.resource({ group: names.events, version: "v1", plural: "events", namespaced: true });

async function last(call: (r: { csr: ResourceClient; sa: ResourceClient; events: ResourceClient }) => Promise<unknown>): Promise<Recorded> {
  await call({ csr: csr(), sa: sa(), events: events() });
  return server.requests.at(-1)!;
}

const obj = (name: string, namespace?: string, resourceVersion?: string): ApiObject => ({
  apiVersion: "v1",
  kind: "Thing",
  metadata: { name, ...(namespace ? { namespace } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
});

describe("resource client", () => {
  it.each<[string, (r: { csr: ResourceClient; sa: ResourceClient; events: ResourceClient }) => Promise<unknown>, string, string]>([
    ["gets a cluster-scoped object", (r) => r.csr.get("node-csr-1"), "GET", "/apis/certificates.platform.io/v1/certificatesigningrequests/node-csr-1"],
    ["gets a namespaced object in the config's namespace", (r) => r.sa.get("robot"), "GET", "/api/v1/namespaces/home/serviceaccounts/robot"],
    ["gets a namespaced object in a given namespace", (r) => r.sa.get("robot", { namespace: "ops" }), "GET", "/api/v1/namespaces/ops/serviceaccounts/robot"],
    ["lists across all namespaces without a namespace", (r) => r.events.list(), "GET", "/apis/events.platform.io/v1/events"],
    [
      "lists with selectors and paging",
      (r) => r.csr.list({ fieldSelector: "spec.signerName=platform.io/apiserver-client", labelSelector: "a in (b,c)", limit: 50, continue: "tok", resourceVersion: "0", resourceVersionMatch: "NotOlderThan" }),
      "GET",
      "/apis/certificates.platform.io/v1/certificatesigningrequests?labelSelector=a+in+%28b%2Cc%29&fieldSelector=spec.signerName%3Dplatform.io%2Fapiserver-client&limit=50&continue=tok&resourceVersion=0&resourceVersionMatch=NotOlderThan",
    ],
    ["creates in the object's namespace with dryRun and fieldManager", (r) => r.events.create(obj("e1", "ns1"), { dryRun: true, fieldManager: "recorder" }), "POST", "/apis/events.platform.io/v1/namespaces/ns1/events?dryRun=All&fieldManager=recorder"],
    ["creates a cluster-scoped object", (r) => r.csr.create(obj("c1")), "POST", "/apis/certificates.platform.io/v1/certificatesigningrequests"],
    ["updates a subresource", (r) => r.csr.update(obj("c1", undefined, "7"), { subresource: "approval" }), "PUT", "/apis/certificates.platform.io/v1/certificatesigningrequests/c1/approval"],
    ["updates a namespaced object in its namespace", (r) => r.sa.update(obj("robot", "ops")), "PUT", "/api/v1/namespaces/ops/serviceaccounts/robot"],
    ["patches a status subresource", (r) => r.csr.patch("c1", "merge", { status: {} }, { subresource: "status" }), "PATCH", "/apis/certificates.platform.io/v1/certificatesigningrequests/c1/status"],
    ["deletes an object", (r) => r.sa.delete("robot"), "DELETE", "/api/v1/namespaces/home/serviceaccounts/robot"],
    ["escapes names in the path", (r) => r.csr.get("a b%c"), "GET", "/apis/certificates.platform.io/v1/certificatesigningrequests/a%20b%25c"],
  ])("%s", async (_name, call, method, url) => {
    const req = await last(call);
    expect([req.method, req.url]).toEqual([method, url]);
  });

  it.each([
    ["json", "application/json-patch+json", [{ op: "replace", path: "/spec/a", value: 1 }]],
    ["merge", "application/merge-patch+json", { metadata: { labels: { a: "b" } } }],
    ["strategic", "application/strategic-merge-patch+json", { spec: { containers: [{ name: "c", image: "i" }] } }],
  ] as const)("sends a %s patch as %s", async (type, contentType, patch) => {
    const req = await last((r) => r.sa.patch("robot", type, patch, { fieldManager: "platformctl-patch" }));
    expect([req.headers["content-type"], JSON.parse(req.body), req.url]).toEqual([contentType, patch, "/api/v1/namespaces/home/serviceaccounts/robot?fieldManager=platformctl-patch"]);
  });

  it("sends delete preconditions as DeleteOptions", async () => {
    const req = await last((r) => r.csr.delete("c1", { preconditions: { uid: "u-1", resourceVersion: "9" } }));
    expect(JSON.parse(req.body)).toEqual({ apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid: "u-1", resourceVersion: "9" } });
  });

  it("returns the decoded object the server answers", async () => {
    expect(await csr().create(obj("c9"))).toEqual({ echoed: obj("c9") });
  });

  it.each([
    ["an empty name", () => csr().get(""), /expected a name \(non-empty, without "\/"\), got ""/],
    ["a name with a slash", () => csr().get("a/b"), /expected a name .* got "a\/b"/],
    ["a dot-dot name", () => sa().get(".."), /expected a name/],
    ["a namespace with a slash", () => sa().get("x", { namespace: "a/b" }), /expected a namespace/],
    ["an unknown patch type", () => sa().patch("x", "apply" as never, {}), /expected patch type json, merge or strategic, got "apply"/],
  ])("refuses %s with INVALID_ARGUMENT before sending", async (_name, call, message) => {
    const before = server.requests.length;
    await expect((async () => call())()).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(message) });
    expect(server.requests.length).toBe(before);
  });
});
