// The secure server's health and metrics: health endpoints public through RBAC while every other path stays 401
// without credentials, per-check paths and /metrics for system:monitoring, and the metrics' values.
import { execFileSync } from "node:child_process";
import { request as httpsRequest } from "node:https";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MONITORING_GROUP, PUBLIC_INFO_ROLE } from "../../../src/apiserver/auth/bootstrap-policy.js";
import { sample } from "../../controller/controllers/cluster.js";
import { testCa } from "../../fixtures/ca.js";
import { TOKENS, useSecureFixture } from "./fixtures.js";

const fx = useSecureFixture();
const withClientCa = useSecureFixture({ clientCa: async () => (await testCa({ commonName: "metrics extra client CA" })).certPem });
const admin = { token: TOKENS.admin };

/** NotAfter of a certificate file as openssl reads it, in seconds since the epoch. */
function opensslNotAfter(file: string): number {
  const out = execFileSync("openssl", ["x509", "-in", file, "-noout", "-enddate"], { encoding: "utf8" });
  return Date.parse(out.trim().replace(/^notAfter=/, "")) / 1000;
}

describe("health endpoints", () => {
  it.each(["/healthz", "/livez", "/readyz"])("answers %s without credentials, as upstream's public-info role allows", async (path) => {
    const f = fx();
    expect(await f.call("GET", path)).toMatchObject({ status: 200, text: "ok" });
    const verbose = await f.call("GET", `${path}?verbose`);
    expect(verbose.status).toBe(200);
    expect(verbose.text).toMatch(/^\[\+\]ping ok\n\[\+\]storage ok\n/);
    expect(verbose.text.endsWith(`${path.slice(1)} check passed\n`)).toBe(true);
  });

  it("skips the checks named by ?exclude= and warns about names that match none", async () => {
    const r = await fx().call("GET", "/readyz?verbose&exclude=storage&exclude=etcd");
    expect(r.status).toBe(200);
    expect(r.text).toBe('[+]ping ok\n[+]storage excluded: ok\n[+]registry-bootstrap ok\nwarn: some health checks cannot be excluded: no matches for "etcd"\nreadyz check passed\n');
  });

  it.each(["/version", "/api", "/apis", "/metrics", "/readyz/ping", "/healthz/storage", "/healthz/", "/nothing", "/api/v1/namespaces/default/serviceaccounts"])(
    "still answers %s with 401 without credentials",
    async (path) => {
      const r = await fx().call("GET", path);
      expect([r.status, r.body?.reason]).toEqual([401, "Unauthorized"]);
    },
  );

  it("answers 401 to bad credentials and to impersonation on a health path: only a request with nothing is anonymous", async () => {
    const f = fx();
    expect((await f.call("GET", "/healthz", { token: "not-a-token" })).status).toBe(401);
    expect((await f.call("GET", "/healthz", { headers: { "Impersonate-User": "admin" } })).status).toBe(401);
  });

  it("lets RBAC decide: without the public-info binding an anonymous /healthz is 403", async () => {
    const f = fx();
    const path = `/apis/${f.names.rbac}/v1/clusterrolebindings/${PUBLIC_INFO_ROLE}`;
    const saved = (await f.call("GET", path, admin)).body;
    expect((await f.call("DELETE", path, admin)).status).toBe(200);
    try {
      let r = await f.call("GET", "/healthz");
      for (let i = 0; i < 200 && r.status === 200; i++) r = await f.call("GET", "/healthz");
      expect([r.status, r.body?.message]).toEqual([403, 'forbidden: User "system:anonymous" cannot get path "/healthz"']);
    } finally {
      const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ct, managedFields: _mf, ...metadata } = saved.metadata;
      expect((await f.call("POST", `/apis/${f.names.rbac}/v1/clusterrolebindings`, { ...admin, body: { ...saved, metadata } })).status).toBe(201);
    }
  });

  it("answers each check on its own path for system:monitoring, 404 for an unknown check", async () => {
    const f = fx();
    const monitor = { cert: await f.clientCert({ cn: "prometheus", o: [MONITORING_GROUP] }) };
    expect(await f.call("GET", "/readyz/storage", monitor)).toMatchObject({ status: 200, text: "ok" });
    expect(await f.call("GET", "/livez/ping", monitor)).toMatchObject({ status: 200, text: "ok" });
    expect((await f.call("GET", "/healthz/etcd", monitor)).status).toBe(404);
    expect((await f.call("GET", "/readyz/storage", { token: TOKENS.alice })).status).toBe(403);
  });
});

describe("/metrics", () => {
  it("is 401 without credentials, 403 without the monitoring role, 200 with it", async () => {
    const f = fx();
    expect((await f.call("GET", "/metrics")).status).toBe(401);
    const denied = await f.call("GET", "/metrics", { token: TOKENS.alice });
    expect([denied.status, denied.body?.message]).toEqual([403, 'forbidden: User "alice" cannot get path "/metrics"']);
    const monitor = await f.call("GET", "/metrics", { cert: await f.clientCert({ cn: "prometheus", o: [MONITORING_GROUP] }) });
    expect(monitor.status).toBe(200);
    expect(monitor.text).toMatch(/^# TYPE apiserver_request_total counter$/m);
  });

  it("counts requests by verb, resource, scope and code, and authentication attempts by result", async () => {
    const f = fx();
    const scrape = async () => (await f.call("GET", "/metrics", admin)).text;
    const list = 'apiserver_request_total{verb="LIST",dry_run="",group="",version="v1",resource="serviceaccounts",subresource="",scope="namespace",component="apiserver",code="200"}';
    const forbidden = `apiserver_request_total{verb="GET",dry_run="",group="${f.names.certificates}",version="v1",resource="certificatesigningrequests",subresource="",scope="resource",component="apiserver",code="403"}`;
    const before = await scrape();
    expect((await f.call("GET", "/api/v1/namespaces/default/serviceaccounts", admin)).status).toBe(200);
    expect((await f.call("GET", `/apis/${f.names.certificates}/v1/certificatesigningrequests/x`, { token: TOKENS.bob })).status).toBe(403);
    expect((await f.call("GET", "/version")).status).toBe(401);
    expect((await f.call("GET", "/version", { token: "wrong" })).status).toBe(401);
    const after = await scrape();
    expect(sample(after, list) - sample(before, list)).toBe(1);
    expect(sample(after, forbidden) - sample(before, forbidden)).toBe(1);
    for (const result of ["failure", "error"]) {
      const series = `authentication_attempts{result="${result}"}`;
      expect(sample(after, series) - sample(before, series)).toBe(1);
    }
    // Authenticated in between: the list, bob's request, and the scrape that read `after`.
    expect(sample(after, 'authentication_attempts{result="success"}') - sample(before, 'authentication_attempts{result="success"}')).toBe(3);
    // Each attempt is timed too: as many more observations of its result, every one within the last bucket.
    for (const [result, more] of [["success", 3], ["failure", 1], ["error", 1]] as const) {
      const count = `authentication_duration_seconds_count{result="${result}"}`;
      expect(sample(after, count) - sample(before, count)).toBe(more);
      expect(sample(after, `authentication_duration_seconds_bucket{le="+Inf",result="${result}"}`)).toBe(sample(after, count));
    }
    expect(after).toMatch(/^apiserver_request_duration_seconds_count\{verb="LIST",dry_run="",group="",version="v1",resource="serviceaccounts",subresource="",scope="namespace",component="apiserver"\} [1-9]/m);
    // Upstream's SLI latency beside it: the same requests, without the dry_run label.
    const listCount = /^apiserver_request_duration_seconds_count\{verb="LIST",dry_run="",group="",version="v1",resource="serviceaccounts",subresource="",scope="namespace",component="apiserver"\} (\d+)/m.exec(after)![1];
    expect(after).toContain(`\napiserver_request_sli_duration_seconds_count{verb="LIST",group="",version="v1",resource="serviceaccounts",subresource="",scope="namespace",component="apiserver"} ${listCount}\n`);
    expect(after).not.toMatch(/^apiserver_request_sli_duration_seconds\S*\{[^}]*dry_run/m);
    expect(after).toMatch(/^apiserver_current_inflight_requests\{request_kind="readOnly"\} 1$/m);
  });

  it("reports the process under the names of upstream's servers, once per scrape however many servers the process runs", async () => {
    // Two servers in this test process (the file's two fixtures): the process's metrics are one set, not one per server.
    const [text] = await Promise.all([fx().call("GET", "/metrics", admin).then((r) => r.text), withClientCa().call("GET", "/metrics", admin)]);
    const rss = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync("/proc/self/status", "utf8"))![1]) * 1024;
    expect(text.match(/^# TYPE process_resident_memory_bytes gauge$/gm)).toHaveLength(1);
    expect(sample(text, "process_resident_memory_bytes") / rss).toBeGreaterThan(0.5);
    expect(sample(text, "process_resident_memory_bytes") / rss).toBeLessThan(2);
    expect(Math.abs(sample(text, "process_start_time_seconds") - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2);
    expect(sample(text, "process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(sample(text, "process_open_fds")).toBeGreaterThan(0);
    expect(sample(text, "process_open_fds")).toBeLessThanOrEqual(readdirSync("/proc/self/fd").length + 16);
    expect(sample(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_heap_size_used_bytes")).toBeLessThan(sample(text, "process_resident_memory_bytes"));
  });

  it("reports the stored objects of each resource", async () => {
    const f = fx();
    const roles = (await f.call("GET", `/apis/${f.names.rbac}/v1/clusterroles`, admin)).body.items.length;
    const text = (await f.call("GET", "/metrics", admin)).text;
    expect(roles).toBeGreaterThan(5);
    expect(sample(text, `apiserver_storage_objects{resource="clusterroles.${f.names.rbac}"}`)).toBe(roles);
    expect(sample(text, 'apiserver_storage_objects{resource="namespaces"}')).toBe((await f.call("GET", "/api/v1/namespaces", admin)).body.items.length);
  });

  it("counts an open watch as long-running, not in flight, until it ends", async () => {
    const f = fx();
    const series = 'apiserver_longrunning_requests{verb="WATCH",dry_run="",group="",version="v1",resource="serviceaccounts",subresource="",scope="namespace",component="apiserver"}';
    const url = new URL(f.state.server.address);
    const req = httpsRequest({ host: url.hostname, port: url.port, path: "/api/v1/namespaces/default/serviceaccounts?watch=1", headers: { authorization: `Bearer ${TOKENS.admin}` }, rejectUnauthorized: false, agent: false });
    await new Promise<void>((resolve, reject) => req.on("response", () => resolve()).on("error", reject).end());
    const open = (await f.call("GET", "/metrics", admin)).text;
    expect(sample(open, series)).toBe(1);
    expect(sample(open, 'apiserver_registered_watchers{group="",version="v1",kind="ServiceAccount"}')).toBe(1);
    req.destroy();
    let closed = open;
    for (let i = 0; i < 100 && sample(closed, series) !== 0; i++) closed = (await f.call("GET", "/metrics", admin)).text;
    expect(sample(closed, series)).toBe(0);
    expect(closed).toMatch(/^apiserver_request_total\{verb="WATCH",.*resource="serviceaccounts",.*code="200"\} 1$/m);
  });

  it("gives the NotAfter of the cluster CA and of the serving certificate, to the second", async () => {
    const f = fx();
    const text = (await f.call("GET", "/metrics", admin)).text;
    const pki = join(f.dataDir, "pki");
    for (const [usage, name, file] of [["ca", "cluster-ca", "ca.crt"], ["serving", "apiserver", "apiserver.crt"]] as const) {
      const line = text.split("\n").find((l) => l.startsWith(`platform_ca_certificate_expiration_timestamp_seconds{usage="${usage}",name="${name}",`));
      expect(line, `${usage} ${name}`).toBeDefined();
      expect(Number(line!.split(" ").at(-1))).toBe(opensslNotAfter(join(pki, file)));
    }
  });

  it("reports each --client-ca-file certificate beside the cluster CA", async () => {
    const f = withClientCa();
    const extra = await testCa({ commonName: "metrics extra client CA" });
    const text = (await f.call("GET", "/metrics", admin)).text;
    const line = text.split("\n").find((l) => l.startsWith('platform_ca_certificate_expiration_timestamp_seconds{usage="client-ca",name="client-ca-file",subject="CN=metrics extra client CA",'));
    expect(Number(line?.split(" ").at(-1))).toBe(extra.ca.notAfter.getTime() / 1000);
    expect(text).toMatch(/^platform_ca_certificate_expiration_timestamp_seconds\{usage="ca",name="cluster-ca",/m);
  });
});
