// admin.conf: a kubeconfig with a system:masters client certificate, kept while it fits and rewritten when it does not.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN_CERT_LIFETIME_SECONDS, ensureAdminConfig, readAdminConfig } from "../../../src/apiserver/bootstrap/admin-config.js";
import { generateCa, type GeneratedCa } from "../../../src/pki/ca.js";
import { tool } from "../../cli/fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const T = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;
const SERVER = "https://127.0.0.1:6443";
let ca: GeneratedCa;

beforeAll(async () => {
  ca = await generateCa({ commonName: "admin test CA", keyType: "p256", lifetimeSeconds: 10 * 365 * 86_400, now: new Date(T - DAY) });
});

const write = (path: string, o: { server?: string; at?: number; ca?: GeneratedCa } = {}) =>
  ensureAdminConfig({ path, server: o.server ?? SERVER, ca: (o.ca ?? ca).ca, now: () => new Date(o.at ?? T) });
const material = (path: string) => readAdminConfig(readFileSync(path, "utf8"))!;

describe("ensureAdminConfig", () => {
  it("writes a kubeconfig (0600) whose certificate is platform-ca:admin in system:masters, issued by the CA", async () => {
    const dir = tempDir();
    const path = join(dir, "admin.conf");
    const r = await write(path);
    expect(r).toMatchObject({ action: "created", path });
    expect((statSync(path).mode & 0o777).toString(8)).toBe("600");
    const doc = parseYaml(readFileSync(path, "utf8"));
    expect(doc).toMatchObject({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "platform-ca",
      contexts: [{ name: "platform-ca", context: { cluster: "platform-ca", user: "admin" } }],
      clusters: [{ name: "platform-ca", cluster: { server: SERVER } }],
    });
    const m = material(path);
    expect(m.caPem.trim()).toBe(ca.certPem.trim());
    writeFileSync(join(dir, "admin.crt"), m.certPem);
    writeFileSync(join(dir, "ca.crt"), m.caPem);
    const subject = await tool("openssl", ["x509", "-noout", "-subject", "-in", join(dir, "admin.crt")]);
    expect(subject.out).toMatch(/O\s?=\s?system:masters, CN\s?=\s?platform-ca:admin/);
    const verified = await tool("openssl", ["verify", "-attime", String(T / 1000 + 3600), "-purpose", "sslclient", "-CAfile", join(dir, "ca.crt"), join(dir, "admin.crt")]);
    expect(verified).toMatchObject({ code: 0, out: expect.stringContaining(": OK") });
  });

  it("keeps it while the server, CA and certificate still fit", async () => {
    const path = join(tempDir(), "admin.conf");
    await write(path);
    const before = readFileSync(path, "utf8");
    expect((await write(path, { at: T + 100 * DAY })).action).toBe("kept");
    expect(readFileSync(path, "utf8")).toBe(before);
  });

  it("rewrites the server when it moved, keeping the certificate", async () => {
    const path = join(tempDir(), "admin.conf");
    await write(path);
    const cert = material(path).certPem;
    const r = await write(path, { server: "https://127.0.0.1:40123" });
    expect(r).toMatchObject({ action: "rewritten", reason: `the server moved from ${SERVER} to https://127.0.0.1:40123` });
    expect(material(path)).toMatchObject({ server: "https://127.0.0.1:40123", certPem: cert });
  });

  it.each([
    ["the certificate nears expiry", () => ({ at: T + ADMIN_CERT_LIFETIME_SECONDS * 1000 - 10 * DAY }), /its certificate expires at .*within 30 days/],
    ["the cluster CA changed", async () => ({ ca: await generateCa({ commonName: "new CA", keyType: "p256", lifetimeSeconds: 3_650 * 86_400, now: new Date(T - DAY) }) }), /its certificate was not issued by the current cluster CA/],
  ])("issues a new certificate when %s", async (_name, change, reason) => {
    const path = join(tempDir(), "admin.conf");
    await write(path);
    const cert = material(path).certPem;
    const o = await change();
    const r = await write(path, o);
    expect(r.action).toBe("rewritten");
    expect(r.reason).toMatch(reason);
    expect(material(path).certPem).not.toBe(cert);
  });

  it("replaces a file that is not an admin.conf, saying so", async () => {
    const path = join(tempDir(), "admin.conf");
    writeFileSync(path, "clusters: 3\n");
    expect(await write(path)).toMatchObject({ action: "rewritten", reason: "it is not an admin.conf written by platform-ca" });
    expect(material(path).server).toBe(SERVER);
  });

  it.each([
    ["a plain-HTTP server", { server: "http://127.0.0.1:1" }, /expected `server` to be an https:\/\/ address/],
    ["no path", { path: "" }, /expected `path` to be a file path/],
  ])("refuses %s", async (_name, o, message) => {
    await expect(ensureAdminConfig({ path: "x", server: SERVER, ca: ca.ca, ...o })).rejects.toMatchObject({ code: "INVALID_OPTION", message: expect.stringMatching(message) });
  });
});
