// Exec credential plugins run as real processes: v1/v1beta1, caching until expiry, cluster info, failures.
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadClientConfig } from "../../src/client/config-file.js";
import { createCredentialSource } from "../../src/client/credentials.js";
import { ExecPlugin } from "../../src/client/exec-plugin.js";
import { resolveRestConfig } from "../../src/client/resolve-config.js";
import { createClient } from "../../src/client/rest-client.js";
import type { ExecConfig, RestConfig } from "../../src/client/rest-config.js";
import { AgentPool } from "../../src/client/transport.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { configDoc, restConfig, writeConfig } from "./fixtures/config.js";
import { createTestPki, type TestPki } from "./fixtures/pki.js";
import { sendJson, sendStatus, startServer, type TestServer } from "./fixtures/server.js";
import { failure } from "./fixtures/failure.js";
import { tempDir } from "../fixtures/temp-dir.js";

const PLUGIN = fileURLToPath(new URL("./fixtures/credential-plugin.mjs", import.meta.url));
const V1 = "client.authentication.platform.io/v1";

let pki: TestPki;
let mtls: TestServer;
beforeAll(async () => {
  pki = createTestPki();
  mtls = await startServer((req, res) => sendJson(res, 200, { cn: req.clientCn ?? null }), { tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.ca, requireClientCert: true } });
});
afterAll(async () => {
  await mtls.close();
  pki.remove();
});

interface PluginSetup {
  readonly mode?: string;
  readonly apiVersion?: string;
  readonly expires?: string;
  readonly interactiveMode?: ExecConfig["interactiveMode"];
  readonly provideClusterInfo?: boolean;
  readonly command?: string;
  readonly installHint?: string;
  readonly env?: Record<string, string>;
}

/** An exec config running the test plugin, and the log file it writes one line per run to. */
function plugin(o: PluginSetup = {}): { exec: ExecConfig; runs: () => { info: Record<string, unknown>; echo: string | null }[] } {
  const log = join(tempDir("exec-log-"), "runs.jsonl");
  const env = { PLUGIN_LOG: log, PLUGIN_MODE: o.mode ?? "token", PLUGIN_CERT: pki.client.certPath, PLUGIN_KEY: pki.client.keyPath, PLUGIN_OTHER_KEY: pki.server.keyPath, PLUGIN_CERT2: pki.client2.certPath, PLUGIN_KEY2: pki.client2.keyPath, ...(o.expires ? { PLUGIN_EXPIRES: o.expires } : {}), ...o.env };
  return {
    exec: {
      apiVersion: o.apiVersion ?? V1,
      command: o.command ?? process.execPath,
      args: o.command ? [] : [PLUGIN],
      env: Object.entries(env).map(([name, value]) => ({ name, value })),
      interactiveMode: o.interactiveMode ?? "IfAvailable",
      provideClusterInfo: o.provideClusterInfo ?? false,
      ...(o.installHint ? { installHint: o.installHint } : {}),
    },
    runs: () => {
      try {
        return readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      } catch {
        return [];
      }
    },
  };
}

function execPlugin(exec: ExecConfig, o: { clock?: FakeClock; tty?: boolean; config?: Partial<RestConfig> } = {}) {
  const config = restConfig({ server: "https://127.0.0.1:1", credentials: { type: "exec", exec }, ...o.config });
  return createCredentialSource(config, { clock: o.clock ?? new FakeClock(), stdinIsTty: o.tty ?? false }) as ExecPlugin;
}

describe("exec credential plugin", () => {
  it.each([V1, "client.authentication.platform.io/v1beta1"])("runs a %s plugin and sends the token it prints", async (apiVersion) => {
    const p = plugin({ apiVersion, env: { PLUGIN_ECHO: "from-config-env" } });
    const server = await startServer((req, res) => sendJson(res, 200, { auth: req.headers.authorization }));
    try {
      const c = createClient(restConfig({ server: server.url, credentials: { type: "exec", exec: p.exec } }), { agents: new AgentPool(), stdinIsTty: false });
      expect(await c.request("GET", "/x")).toEqual({ auth: "Bearer token-1" });
      c.close();
    } finally {
      await server.close();
    }
    expect(p.runs()).toEqual([{ info: { apiVersion, kind: "ExecCredential", spec: { interactive: false } }, echo: "from-config-env" }]);
  });

  it("caches the credential until its expirationTimestamp, then runs the plugin again", async () => {
    const clock = new FakeClock(Date.parse("2030-01-01T00:00:00Z"));
    const p = plugin({ expires: "2030-01-01T00:10:00Z" });
    const source = execPlugin(p.exec, { clock });
    expect(await source.get()).toEqual({ authorization: "Bearer token-1" });
    clock.tick(9 * 60_000 + 59_999);
    expect(await source.get()).toEqual({ authorization: "Bearer token-1" });
    expect(source.runs).toBe(1);
    clock.tick(1);
    expect(await source.get()).toEqual({ authorization: "Bearer token-2" });
    expect([source.runs, p.runs().length]).toEqual([2, 2]);
  });

  it("keeps a credential without expirationTimestamp until a 401, and shares one run among concurrent callers", async () => {
    const p = plugin();
    const source = execPlugin(p.exec);
    const all = await Promise.all(Array.from({ length: 5 }, () => source.get()));
    expect(new Set(all.map((a) => a.authorization))).toEqual(new Set(["Bearer token-1"]));
    expect(source.runs).toBe(1);
  });

  it("runs the plugin again after a 401 and repeats the request with the new token", async () => {
    const p = plugin();
    const server = await startServer((req, res) =>
      req.headers.authorization === "Bearer token-2" ? sendJson(res, 200, { ok: true }) : sendStatus(res, 401, "Unauthorized", "token expired"),
    );
    try {
      const c = createClient(restConfig({ server: server.url, credentials: { type: "exec", exec: p.exec } }), { agents: new AgentPool(), stdinIsTty: false });
      expect(await c.request("POST", "/apis/g/v1/things", {})).toEqual({ ok: true });
      expect(server.requests.map((r) => r.headers.authorization)).toEqual(["Bearer token-1", "Bearer token-2"]);
      expect(p.runs()).toHaveLength(2);
      c.close();
    } finally {
      await server.close();
    }
  });

  it("passes the cluster from the client config when provideClusterInfo is set", async () => {
    const p = plugin({ provideClusterInfo: true });
    const file = writeConfig(
      join(tempDir(), "config"),
      configDoc({
        clusters: {
          c: {
            server: "https://127.0.0.1:6443",
            "certificate-authority-data": Buffer.from(pki.ca).toString("base64"),
            "tls-server-name": "api.test",
            "disable-compression": true,
            "proxy-url": "http://proxy.test:3128",
            extensions: [{ name: "client.authentication.platform.io/exec", extension: { audience: "ca", tenant: 7 } }],
          },
        },
        users: { u: { exec: { ...p.exec, env: p.exec.env.map((e) => ({ ...e })) } } },
        contexts: { x: { cluster: "c", user: "u" } },
        current: "x",
      }),
    );
    const config = await resolveRestConfig(await loadClientConfig({ explicitPath: file }));
    await createCredentialSource(config, { stdinIsTty: false }).get();
    expect(p.runs()[0]!.info.spec).toEqual({
      interactive: false,
      cluster: {
        server: "https://127.0.0.1:6443",
        "tls-server-name": "api.test",
        "certificate-authority-data": Buffer.from(pki.ca).toString("base64"),
        "proxy-url": "http://proxy.test:3128",
        "disable-compression": true,
        config: { audience: "ca", tenant: 7 },
      },
    });
  });

  it.each<[ExecConfig["interactiveMode"], boolean, boolean]>([
    ["IfAvailable", false, false],
    ["IfAvailable", true, true],
    ["Never", true, false],
    ["Always", true, true],
  ])("with interactiveMode %s and a terminal %s, tells the plugin interactive: %s", async (interactiveMode, tty, expected) => {
    const p = plugin({ interactiveMode });
    await execPlugin(p.exec, { tty }).get();
    expect(p.runs()[0]!.info).toMatchObject({ spec: { interactive: expected } });
  });

  it("refuses an interactiveMode Always plugin without a terminal, before running it", async () => {
    const p = plugin({ interactiveMode: "Always" });
    const err = await failure(execPlugin(p.exec, { tty: false }).get());
    expect(err.message).toMatch(/needs an interactive terminal \(interactiveMode: Always\), but standard input is not a terminal/);
    expect(p.runs()).toEqual([]);
  });

  it("names a missing command and prints its install hint", async () => {
    const p = plugin({ command: "platform-login-not-installed", installHint: "Install it with: apt-get install platform-login" });
    const err = await failure(execPlugin(p.exec).get());
    expect([err.code, err.message]).toEqual([
      "CREDENTIALS_UNAVAILABLE",
      'exec plugin "platform-login-not-installed" was not found (is it installed and on PATH?)\nInstall it with: apt-get install platform-login',
    ]);
  });

  it("reports a failing plugin's exit code and the tail of its stderr", async () => {
    const err = await failure(execPlugin(plugin({ mode: "fail" }).exec).get());
    expect(err.code).toBe("CREDENTIALS_UNAVAILABLE");
    expect(err.message).toMatch(/exited with code 3: …\n(line 1 of noise\n)+login failed: refresh token revoked$/);
    expect(err.message.length).toBeLessThan(2200);
  });

  it.each([
    ["not-json", /standard output is not JSON/],
    ["wrong-version", /apiVersion "client\.authentication\.other\.io\/v1" does not match the configured "client\.authentication\.platform\.io\/v1"/],
    ["wrong-kind", /kind is "Secret", expected "ExecCredential"/],
    ["no-status", /status is missing/],
    ["empty-status", /status holds neither token nor clientCertificateData with clientKeyData/],
    ["cert-only", /status\.clientCertificateData and status\.clientKeyData must be given together/],
    ["mismatched-pair", /status\.clientKeyData: the private key does not belong to the certificate/],
    ["bad-expiry", /status\.expirationTimestamp "tomorrow" is not an RFC 3339 time/],
  ])("refuses a plugin answer with %s", async (mode, message) => {
    const err = await failure(execPlugin(plugin({ mode }).exec).get());
    expect(err.code).toBe("CREDENTIALS_UNAVAILABLE");
    expect(err.message).toMatch(/^exec plugin ".*" printed (no|an invalid) ExecCredential: /);
    expect(err.message).toMatch(message);
  });

  it("presents a client certificate the plugin prints to a mutual-TLS server", async () => {
    const p = plugin({ mode: "cert" });
    const c = createClient(restConfig({ server: mtls.url, tls: { ca: pki.ca }, credentials: { type: "exec", exec: p.exec } }), { agents: new AgentPool(), stdinIsTty: false });
    expect(await c.request("GET", "/whoami")).toEqual({ cn: "alice" });
    c.close();
  });

  it("moves to a rotated plugin certificate and retires the old connections", async () => {
    const clock = new FakeClock(Date.parse("2030-01-01T00:00:00Z"));
    const p = plugin({ mode: "rotate", expires: "2030-01-01T01:00:00Z" });
    const pool = new AgentPool();
    const c = createClient(restConfig({ server: mtls.url, tls: { ca: pki.ca }, credentials: { type: "exec", exec: p.exec } }), { agents: pool, clock, stdinIsTty: false });
    expect(await c.request("GET", "/whoami")).toEqual({ cn: "alice" });
    clock.tick(3_600_000);
    expect(await c.request("GET", "/whoami")).toEqual({ cn: "bob" });
    expect(pool.size).toBe(1);
    c.close();
    expect(pool.size).toBe(0);
  });
});
