// The data-directory PKI: first start creates, later starts reuse, the serving certificate is reissued only for a reason.
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { bootstrapPki, SERVING_LIFETIME_SECONDS, servingNames, type PkiOptions } from "../../../src/apiserver/bootstrap/pki.js";
import { createLogger } from "../../../src/logger.js";
import { generateKeyPair } from "../../../src/pki/keys.js";
import { tool } from "../../cli/fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const T = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;

/** Options for one start at time `at`, logging into `lines`. */
function start(dataDir: string, o: { at?: number; host?: string; lines?: string[] } = {}) {
  const lines = o.lines ?? [];
  const destination = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
  const options: PkiOptions = { dataDir, listenHost: o.host ?? "127.0.0.1", now: () => new Date(o.at ?? T), logger: createLogger({ level: "info", destination }) };
  return bootstrapPki(options);
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
const read = (path: string) => readFileSync(path, "utf8");
const opensslVerify = (dir: string, at: number, purpose: string) =>
  tool("openssl", ["verify", "-attime", String(Math.floor(at / 1000)), "-purpose", purpose, "-CAfile", join(dir, "ca.crt"), join(dir, "apiserver.crt")]);

describe("bootstrapPki", () => {
  it("gives replicas starting at once on one data directory the same cluster CA, created once", async () => {
    const dataDir = join(tempDir(), "data");
    const lines: string[] = [];
    const starts = await Promise.all(Array.from({ length: 4 }, () => start(dataDir, { lines })));
    expect(new Set(starts.map((p) => p.ca.certPem)).size).toBe(1);
    expect(starts.filter((p) => p.actions.ca === "created")).toHaveLength(1);
    expect(lines.filter((l) => l.includes("created the cluster CA"))).toHaveLength(1);
    expect(read(starts[0]!.caFiles.certFile)).toBe(starts[0]!.ca.certPem);
    expect(mode(starts[0]!.caFiles.keyFile)).toBe("600");
  });

  it("creates the cluster CA and a serving certificate openssl accepts, private files for the owner only", async () => {
    const dataDir = join(tempDir(), "data");
    const pki = await start(dataDir);
    expect(pki.actions).toEqual({ ca: "created", serving: "created" });
    expect([mode(dataDir), mode(pki.dir), mode(pki.caFiles.keyFile), mode(pki.serving.keyFile)]).toEqual(["700", "700", "600", "600"]);
    expect(await opensslVerify(pki.dir, T + 3_600_000, "sslserver")).toMatchObject({ code: 0, out: expect.stringContaining(": OK") });
    const text = (await tool("openssl", ["x509", "-noout", "-text", "-in", pki.serving.certFile])).out;
    expect(text).toMatch(/DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1/);
    expect(text).toMatch(/TLS Web Server Authentication/);
    expect(text).toMatch(/Issuer: CN\s?=\s?platform-ca cluster CA/);
  });

  it("reuses everything on a later start", async () => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    const second = await start(dataDir, { at: T + 10 * DAY });
    expect(second.actions).toEqual({ ca: "kept", serving: "kept" });
    expect(read(second.caFiles.keyFile)).toBe(read(first.caFiles.keyFile));
    expect(second.serving.certPem).toBe(first.serving.certPem);
  });

  it.each([
    ["the listen host is not named", { host: "10.1.2.3" }, /it does not name 10\.1\.2\.3/],
    ["the certificate expires within 30 days", { at: T + (SERVING_LIFETIME_SECONDS * 1000 - 20 * DAY) }, /within 30 days/],
    ["the certificate has expired", { at: T + SERVING_LIFETIME_SECONDS * 1000 + DAY }, /it expired at/],
  ])("reissues the serving certificate, with a warning, when %s", async (_name, o, reason) => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    const lines: string[] = [];
    const again = await start(dataDir, { ...o, lines });
    expect(again.actions).toEqual({ ca: "kept", serving: "reissued" });
    expect(again.serving.certPem).not.toBe(first.serving.certPem);
    expect(read(again.caFiles.certFile)).toBe(read(first.caFiles.certFile));
    expect(lines.join("")).toMatch(reason);
    expect(lines.join("")).toMatch(/replaced the API server serving certificate/);
  });

  it("reissues the serving certificate when its key file holds another key", async () => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    writeFileSync(first.serving.keyFile, (await generateKeyPair("p256")).privateKeyPem);
    const lines: string[] = [];
    expect((await start(dataDir, { lines })).actions.serving).toBe("reissued");
    expect(lines.join("")).toMatch(/the key file does not belong to the certificate/);
  });

  it("reissues the serving certificate for a new cluster CA", async () => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    renameSync(first.caFiles.certFile, `${first.caFiles.certFile}.old`);
    renameSync(first.caFiles.keyFile, `${first.caFiles.keyFile}.old`);
    const lines: string[] = [];
    const again = await start(dataDir, { lines });
    expect(again.actions).toEqual({ ca: "created", serving: "reissued" });
    expect(lines.join("")).toMatch(/it was not issued by the current cluster CA/);
    expect((await opensslVerify(again.dir, T + 3_600_000, "sslserver")).code).toBe(0);
  });

  it.each([
    ["only the CA certificate is there", (dir: string) => writeFileSync(join(dir, "ca.crt"), "x"), "CA_INVALID", /found .*ca\.crt but not .*ca\.key/],
    ["only the CA key is there", (dir: string) => writeFileSync(join(dir, "ca.key"), "x", { mode: 0o600 }), "CA_INVALID", /found .*ca\.key but not .*ca\.crt/],
    ["the CA certificate is not PEM", (dir: string) => (writeFileSync(join(dir, "ca.crt"), "garbage"), writeFileSync(join(dir, "ca.key"), "garbage", { mode: 0o600 })), "CA_INVALID", /never replaced automatically/],
  ])("stops, changing nothing, when %s", async (_name, prepare, code, message) => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, "pki"), { mode: 0o700 });
    prepare(join(dataDir, "pki"));
    await expect(start(dataDir)).rejects.toMatchObject({ code, message: expect.stringMatching(message) });
    expect(statSync(join(dataDir, "pki")).isDirectory()).toBe(true);
    expect(() => statSync(join(dataDir, "pki", "apiserver.crt"))).toThrow();
  });

  it("refuses an expired cluster CA instead of replacing it", async () => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    const [cert, key] = [read(first.caFiles.certFile), read(first.caFiles.keyFile)];
    await expect(start(dataDir, { at: first.ca.notAfter.getTime() + DAY })).rejects.toMatchObject({ code: "CA_EXPIRED", message: expect.stringMatching(/CA rotation/) });
    expect([read(first.caFiles.certFile), read(first.caFiles.keyFile)]).toEqual([cert, key]);
  });

  it("narrows a PKI directory others can read to 0700", async () => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, "pki"));
    chmodSync(join(dataDir, "pki"), 0o755);
    const pki = await start(dataDir);
    expect(mode(pki.dir)).toBe("700");
  });
});

describe("servingNames", () => {
  it.each([
    ["127.0.0.1", { dns: ["localhost"], ip: ["127.0.0.1", "::1"] }],
    ["::1", { dns: ["localhost"], ip: ["127.0.0.1", "::1"] }],
    ["10.0.0.5", { dns: ["localhost"], ip: ["127.0.0.1", "::1", "10.0.0.5"] }],
    ["CA.Example.com", { dns: ["localhost", "ca.example.com"], ip: ["127.0.0.1", "::1"] }],
    ["0.0.0.0", { dns: ["localhost", hostname().toLowerCase()], ip: ["127.0.0.1", "::1"] }],
  ])("names loopback and the listen host %s", (host, expected) => {
    expect(servingNames(host)).toEqual(expected);
  });
});
