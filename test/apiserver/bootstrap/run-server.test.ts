// The process runner behind `up` and `apiserver`: banner, components started with admin.conf, clean stop on abort.
import { readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAdminConfig } from "../../../src/apiserver/bootstrap/admin-config.js";
import { runSecureServer, type Component, type ComponentContext } from "../../../src/apiserver/bootstrap/run-server.js";
import { openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { silentLogger } from "../../../src/logger.js";
import { tempDir } from "../../fixtures/temp-dir.js";

/** GET with admin.conf's credentials, verifying the server certificate against admin.conf's CA. */
function getWithAdminConfig(path: string, resource: string): Promise<{ status: number; body: any }> {
  const m = readAdminConfig(readFileSync(path, "utf8"))!;
  const url = new URL(m.server + resource);
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: url.hostname, port: url.port, path: url.pathname, ca: m.caPem, cert: m.certPem, key: m.keyPem, agent: false }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

interface Recorder extends Component {
  readonly events: string[];
  context?: ComponentContext;
  seen?: { status: number; body: any };
}

function recorder(name: string): Recorder {
  const r: Recorder = {
    name,
    events: [],
    async start(context) {
      r.context = context;
      r.seen = await getWithAdminConfig(context.adminConfigPath, "/api/v1/namespaces");
      r.events.push("start");
      return { stop: async () => void r.events.push(context.signal.aborted ? "stop after abort" : "stop early") };
    },
  };
  return r;
}

async function run(dataDir: string, components: Component[]) {
  const controller = new AbortController();
  let out = "";
  let started!: () => void;
  const up = new Promise<void>((resolve) => (started = resolve));
  const done = runSecureServer({
    dataDir,
    listen: { host: "127.0.0.1", port: 0 },
    logger: silentLogger(),
    signal: controller.signal,
    write: (text) => {
      out += text;
      started();
    },
    banner: "up",
    components,
  });
  await Promise.race([up, done]);
  return { out: () => out, stop: () => (controller.abort(), done) };
}

describe("runSecureServer", () => {
  it("starts each component with admin.conf that reaches the server, and stops them before the store closes", async () => {
    const dataDir = tempDir();
    const [first, second] = [recorder("first"), recorder("second")];
    const server = await run(dataDir, [first, second]);
    expect(server.out()).toMatch(/^platform-ca is up\n {2}API server {3}https:\/\/127\.0\.0\.1:\d+ \(group suffix platform\.io\)/);
    expect(server.out()).toContain(`kubectl --kubeconfig ${join(dataDir, "admin.conf")} get csr`);
    expect(server.out()).toContain("components   first, second");
    expect(first.context).toMatchObject({ adminConfigPath: join(dataDir, "admin.conf"), dataDir, caFiles: { certFile: join(dataDir, "pki", "ca.crt"), keyFile: join(dataDir, "pki", "ca.key") } });
    expect(first.context!.names.suffix).toBe("platform.io");
    expect(first.seen!.status).toBe(200);
    expect(first.seen!.body.items.map((i: any) => i.metadata.name).sort()).toEqual(["default", "platform-system"]);
    await server.stop();
    expect([first.events, second.events]).toEqual([["start", "stop after abort"], ["start", "stop after abort"]]);
    // The store's exclusive lock is released: a new owner can open it.
    const storage = await openSqliteStorage({ path: join(dataDir, "store.db") });
    await storage.close();
  });

  it("keeps the CA across restarts and points admin.conf at the new port", async () => {
    const dataDir = tempDir();
    const once = await run(dataDir, []);
    const ca = readFileSync(join(dataDir, "pki", "ca.crt"), "utf8");
    const firstServer = readAdminConfig(readFileSync(join(dataDir, "admin.conf"), "utf8"))!.server;
    await once.stop();
    const again = await run(dataDir, [recorder("probe")]);
    const secondServer = readAdminConfig(readFileSync(join(dataDir, "admin.conf"), "utf8"))!.server;
    expect(readFileSync(join(dataDir, "pki", "ca.crt"), "utf8")).toBe(ca);
    expect(again.out()).toContain(`API server listening on ${secondServer}`);
    expect(secondServer).not.toBe(firstServer);
    await again.stop();
  });

  it("stops the components already started when a later one fails, and reports the failure", async () => {
    const dataDir = tempDir();
    const ok = recorder("ok");
    const broken: Component = { name: "broken", start: async () => Promise.reject(new Error("cannot start")) };
    const controller = new AbortController();
    await expect(runSecureServer({ dataDir, listen: { host: "127.0.0.1", port: 0 }, logger: silentLogger(), signal: controller.signal, write: () => undefined, banner: "up", components: [ok, broken] })).rejects.toThrow("cannot start");
    expect(ok.events).toEqual(["start", "stop early"]);
  });
});
