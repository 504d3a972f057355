// The controllers' ops endpoint over real HTTPS against a real secure API server: probes public, /metrics
// authenticated (client certificate, TokenReview) and authorized (SubjectAccessReview), plain HTTP only when asked.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { connect as tlsConnect } from "node:tls";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MONITORING_GROUP } from "../../src/apiserver/auth/bootstrap-policy.js";
import { createClient } from "../../src/client/rest-client.js";
import { ControllerMetrics } from "../../src/controller/metrics.js";
import { OpsServer, type OpsServerOptions } from "../../src/controller/ops-server.js";
import { OPS_PAIR_NAME } from "../../src/controller/ops-tls.js";
import { silentLogger } from "../../src/logger.js";
import { generateCa } from "../../src/pki/ca.js";
import { createBuiltinSigners } from "../../signers/builtins.js";
import { SignerRegistry } from "../../signers/registry.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { httpsCall, TOKENS, useSecureFixture } from "../apiserver/bootstrap/fixtures.js";
import { sample } from "./controllers/cluster.js";

const fx = useSecureFixture();
const servers: OpsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** An ops server whose reviews go to the fixture's API server as its administrator (the controllers' identity in `up`). */
async function startOps(o: Partial<OpsServerOptions> = {}, server = fx().state.server.address, onCreate?: (plural: string) => void): Promise<OpsServer> {
  const f = fx();
  const api = createClient(
    // The fixture's server certificate lives on its fake clock (2030): not verified here, the ops side is under test.
    { server, tls: { insecureSkipVerify: true }, credentials: { type: "token", token: TOKENS.admin }, namespace: "default", userAgent: "ops-test/1", qps: 0, burst: 1 },
    { groupSuffix: f.names.suffix, retry: { maxAttempts: 1 } },
  );
  // Each review the ops side creates is told to `onCreate` by its plural.
  const client: typeof api = Object.create(api, {
    resource: {
      value: (d: Parameters<typeof api.resource>[0]) => {
        const r = api.resource(d);
        return Object.create(r, { create: { value: (body: unknown) => (onCreate?.(d.plural), r.create(body as never)) } });
      },
    },
  });
  const ops = new OpsServer({
    host: "127.0.0.1",
    port: 0,
    client,
    names: f.names,
    clock: { now: () => f.clock.now() },
    metrics: o.metrics ?? new ControllerMetrics(),
    health: () => [{ name: "ping", ok: true }],
    ready: () => [{ name: "ping", ok: true }],
    ...o,
  });
  servers.push(ops);
  await ops.start();
  return ops;
}

/** The NotAfter (seconds) of the certificate a TLS server presents, as openssl reads it. */
async function servedNotAfter(address: string): Promise<number> {
  const url = new URL(address);
  const der = await new Promise<Buffer>((resolve, reject) => {
    const socket = tlsConnect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().raw);
      socket.end();
    }).on("error", reject);
  });
  const out = execFileSync("openssl", ["x509", "-inform", "DER", "-noout", "-enddate"], { input: der, encoding: "utf8" });
  return Date.parse(out.trim().replace(/^notAfter=/, "")) / 1000;
}

describe("the ops endpoint over HTTPS", () => {
  it("answers /healthz, /readyz and /livez without credentials, even when the API server cannot be reached", async () => {
    const ops = await startOps({}, "https://127.0.0.1:1");
    expect(ops.address).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    for (const path of ["/healthz", "/readyz", "/livez"]) expect(await httpsCall(ops.address, "GET", path)).toMatchObject({ status: 200, text: "ok" });
    const r = await httpsCall(ops.address, "GET", "/metrics", { token: TOKENS.admin });
    expect([r.status, r.body?.message]).toEqual([500, expect.stringMatching(/^cannot ask the API server \(tokenreviews\)/)]);
  });

  it("refuses /metrics without credentials (401), with a bad token (401), and to a user RBAC does not allow (403)", async () => {
    const ops = await startOps();
    const none = await httpsCall(ops.address, "GET", "/metrics");
    expect([none.status, none.body?.reason]).toEqual([401, "Unauthorized"]);
    expect((await httpsCall(ops.address, "GET", "/metrics", { token: "not-a-token" })).status).toBe(401);
    const alice = await httpsCall(ops.address, "GET", "/metrics", { token: TOKENS.alice });
    expect([alice.status, alice.body?.message]).toEqual([403, 'forbidden: User "alice" cannot get path "/metrics"']);
  });

  it("asks the API server about a token that authenticated once per 10 s, and about a refused one every time", async () => {
    const f = fx();
    let reviews = 0;
    const ops = await startOps({}, f.state.server.address, (plural) => plural === "tokenreviews" && reviews++);
    const scrape = async (token: string) => (await httpsCall(ops.address, "GET", "/metrics", { token })).status;
    expect([await scrape(TOKENS.admin), await scrape(TOKENS.admin)]).toEqual([200, 200]);
    expect(reviews).toBe(1);
    await f.clock.advance(9_000);
    expect(await scrape(TOKENS.admin)).toBe(200);
    expect(reviews).toBe(1);
    await f.clock.advance(1_001);
    expect(await scrape(TOKENS.admin)).toBe(200);
    expect(reviews).toBe(2);
    expect([await scrape("not-a-token"), await scrape("not-a-token")]).toEqual([401, 401]);
    expect(reviews).toBe(4);
    // Remembered, the token still passes authorization each time: a user RBAC refuses stays refused.
    expect([await scrape(TOKENS.alice), await scrape(TOKENS.alice)]).toEqual([403, 403]);
    expect(reviews).toBe(5);
  });

  it("serves /metrics to the administrator's token and to a system:monitoring client certificate", async () => {
    const f = fx();
    const caFile = join(f.dataDir, "ops-client-ca.pem");
    writeFileSync(caFile, readFileSync(f.state.pki.caFiles.certFile));
    const ops = await startOps({ clientCaFile: caFile });
    expect((await httpsCall(ops.address, "GET", "/metrics", { token: TOKENS.admin })).text).toMatch(/^# TYPE platform_ca_leader gauge$/m);
    const monitor = await httpsCall(ops.address, "GET", "/metrics", { cert: await f.clientCert({ cn: "prometheus", o: [MONITORING_GROUP] }) });
    expect(monitor.status).toBe(200);
    const stranger = await httpsCall(ops.address, "GET", "/metrics", { cert: await f.clientCert({ cn: "nobody" }) });
    expect([stranger.status, stranger.body?.message]).toEqual([403, 'forbidden: User "nobody" cannot get path "/metrics"']);
    const other = await generateCa({ commonName: "another CA", keyType: "p256", lifetimeSeconds: 86_400 * 3650, now: new Date(f.clock.now() - 3600_000) });
    const foreign = await f.clientCert({ cn: "prometheus", o: [MONITORING_GROUP], issuer: other });
    expect((await httpsCall(ops.address, "GET", "/metrics", { cert: foreign })).status).toBe(401);
  });

  it("reports the NotAfter of its serving certificate and of every signer's CA, and counts issues per signer from 0", async () => {
    const f = fx();
    const ca = await generateCa({ commonName: "signer CA", keyType: "p256", lifetimeSeconds: 86_400 * 400, now: new Date() });
    const signers = new SignerRegistry(createBuiltinSigners({ ca: ca.ca, groupSuffix: f.names.suffix }));
    const ops = await startOps({ metrics: new ControllerMetrics({ signers }) });
    const text = (await httpsCall(ops.address, "GET", "/metrics", { token: TOKENS.admin })).text;
    const value = (prefix: string) => Number(text.split("\n").find((l) => l.startsWith(prefix))?.split(" ").at(-1));
    expect(value('platform_ca_certificate_expiration_timestamp_seconds{usage="serving",name="controller-manager",')).toBe(await servedNotAfter(ops.address));
    const caNotAfter = Date.parse(execFileSync("openssl", ["x509", "-noout", "-enddate"], { input: ca.certPem, encoding: "utf8" }).trim().slice("notAfter=".length)) / 1000;
    for (const name of signers.names()) {
      expect(value(`platform_ca_certificate_expiration_timestamp_seconds{usage="ca",name="${name}",`)).toBe(caNotAfter);
      expect(text).toContain(`platform_ca_csr_signed_total{signer="${name}"} 0\n`);
    }
  });

  it("exports the process under upstream's unprefixed names when asked (the controller command asks), not otherwise", async () => {
    const [withProcess, without] = await Promise.all([startOps({ metrics: new ControllerMetrics({ processMetrics: true }) }), startOps()]);
    const text = (await httpsCall(withProcess.address, "GET", "/metrics", { token: TOKENS.admin })).text;
    expect(text).toMatch(/^# TYPE process_resident_memory_bytes gauge$/m);
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(text).toMatch(/^platform_ca_leader /m);
    expect(text).not.toMatch(/^platform_ca_(process|nodejs)_/m);
    expect((await httpsCall(without.address, "GET", "/metrics", { token: TOKENS.admin })).text).not.toMatch(/^(platform_ca_)?process_/m);
  });

  it("answers each check on its own path to an authorized user, and skips the checks ?exclude= names", async () => {
    const ops = await startOps({ ready: () => [{ name: "ping", ok: true }, { name: "informers-synced", ok: false, detail: "not synced yet" }] });
    // Anyone may read /readyz: it names the failed check, and only its own path, behind authorization, says why.
    expect(await httpsCall(ops.address, "GET", "/readyz")).toMatchObject({ status: 503, text: "[+]ping ok\n[-]informers-synced failed: reason withheld\nreadyz check failed\n" });
    expect(await httpsCall(ops.address, "GET", "/readyz?verbose&exclude=informers-synced&exclude=nope")).toMatchObject({
      status: 200,
      text: '[+]ping ok\n[+]informers-synced excluded: ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n',
    });
    expect((await httpsCall(ops.address, "GET", "/readyz/ping")).status).toBe(401);
    expect(await httpsCall(ops.address, "GET", "/readyz/ping", { token: TOKENS.admin })).toMatchObject({ status: 200, text: "ok" });
    expect(await httpsCall(ops.address, "GET", "/readyz/informers-synced", { token: TOKENS.admin })).toMatchObject({ status: 503, text: "internal server error: not synced yet\n" });
    expect((await httpsCall(ops.address, "GET", "/readyz/nope", { token: TOKENS.admin })).status).toBe(404);
  });

  it("serves exactly the always-allowed paths without credentials (a trailing * matches a prefix)", async () => {
    const ops = await startOps({ alwaysAllowPaths: ["/metrics", "/ready*"] });
    expect((await httpsCall(ops.address, "GET", "/metrics")).status).toBe(200);
    expect((await httpsCall(ops.address, "GET", "/readyz")).status).toBe(200);
    expect((await httpsCall(ops.address, "GET", "/healthz")).status).toBe(401);
  });

  it("maps the controller command's flags onto the endpoint's settings", async () => {
    const { controllerSettings } = await import("../../src/cli/commands/controller.js");
    const flags = { groupSuffix: "platform.io", bindAddress: "0.0.0.0:10257", tlsCertFile: "c.pem", tlsPrivateKeyFile: "k.pem", certDir: "d", clientCaFile: "ca.pem", authorizationAlwaysAllowPaths: "/healthz, /metrics" };
    const { ops } = await controllerSettings(flags, silentLogger());
    expect(ops).toEqual({ host: "0.0.0.0", port: 10257, tlsCertFile: "c.pem", tlsKeyFile: "k.pem", certDir: "d", clientCaFile: "ca.pem", alwaysAllowPaths: ["/healthz", "/metrics"] });
    expect((await controllerSettings({ groupSuffix: "platform.io", insecureHttp: true }, silentLogger())).ops).toEqual({ host: "127.0.0.1", port: 10257, insecureHttp: true });
  });

  it("serves the certificate given by --tls-cert-file/--tls-private-key-file, and refuses files that cannot serve, naming them", async () => {
    const dir = tempDir();
    const [cert, key] = [join(dir, "ops.crt"), join(dir, "ops.key")];
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "90", "-subj", "/CN=ops.example", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert], { stdio: "ignore" });
    const ops = await startOps({ tlsCertFile: cert, tlsKeyFile: key });
    const notAfter = Date.parse(execFileSync("openssl", ["x509", "-in", cert, "-noout", "-enddate"], { encoding: "utf8" }).trim().slice("notAfter=".length)) / 1000;
    expect(await servedNotAfter(ops.address)).toBe(notAfter);
    const otherKey = join(dir, "other.key");
    execFileSync("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", otherKey], { stdio: "ignore" });
    await expect(startOps({ tlsCertFile: cert, tlsKeyFile: otherKey })).rejects.toThrow(`the ops serving certificate ${cert}: the key does not belong to the certificate`);
    await expect(startOps({ tlsCertFile: join(dir, "missing.crt"), tlsKeyFile: key })).rejects.toThrow(/cannot read .*missing\.crt/);
    await expect(startOps({ tlsCertFile: cert })).rejects.toThrow(/go together/);
  });

  it("keeps its self-signed pair in --cert-dir (key 0600) and serves the same one after a restart", async () => {
    const dir = join(tempDir(), "ops-certs");
    const first = await startOps({ certDir: dir });
    const before = await servedNotAfter(first.address);
    await first.stop();
    expect(statSync(join(dir, `${OPS_PAIR_NAME}.key`)).mode & 0o777).toBe(0o600);
    const pem = readFileSync(join(dir, `${OPS_PAIR_NAME}.crt`), "utf8");
    const second = await startOps({ certDir: dir });
    expect(await servedNotAfter(second.address)).toBe(before);
    expect(readFileSync(join(dir, `${OPS_PAIR_NAME}.crt`), "utf8")).toBe(pem);
  });

  it("serves plain HTTP without authentication only with insecureHttp", async () => {
    const ops = new OpsServer({ port: 0, insecureHttp: true, metrics: new ControllerMetrics(), health: () => [], ready: () => [] });
    servers.push(ops);
    expect(await ops.start()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${ops.address}/metrics`)).status).toBe(200);
    await expect(new OpsServer({ port: 0, metrics: new ControllerMetrics(), health: () => [], ready: () => [] }).start()).rejects.toThrow(/`client` and `names` to be set/);
  });
});
