// Client config files: search order, merging, relative paths, data vs file fields, and CONFIG_INVALID messages.
import { Buffer } from "node:buffer";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configCandidates, loadClientConfig } from "../../src/client/config-file.js";
import { resolveRestConfig } from "../../src/client/resolve-config.js";
import { configDoc, writeConfig } from "./fixtures/config.js";
import { createTestPki, type TestPki } from "./fixtures/pki.js";
import { failure } from "./fixtures/failure.js";
import { tempDir } from "../fixtures/temp-dir.js";

let pki: TestPki;
beforeAll(() => {
  pki = createTestPki();
});
afterAll(() => pki.remove());

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** Loads `doc` as the only config file and resolves it. */
async function resolveDoc(doc: unknown, overrides = {}, options = {}) {
  const file = writeConfig(join(tempDir(), "config"), doc);
  return resolveRestConfig(await loadClientConfig({ explicitPath: file }), overrides, options);
}

const basic = configDoc({
  clusters: { dev: { server: "https://127.0.0.1:6443", "certificate-authority-data": "" } },
  users: { alice: { token: "tok-alice" } },
  contexts: { dev: { cluster: "dev", user: "alice", namespace: "team-a" } },
  current: "dev",
});

describe("client config file", () => {
  it("resolves the current context's server, user and namespace from a YAML file", async () => {
    const config = await resolveDoc(basic);
    expect(config).toMatchObject({ server: "https://127.0.0.1:6443", credentials: { type: "token", token: "tok-alice" }, namespace: "team-a" });
  });

  it("reads the same document written as JSON", async () => {
    const file = writeConfig(join(tempDir(), "config.json"), basic);
    const config = await resolveRestConfig(await loadClientConfig({ explicitPath: file }));
    expect(config.credentials).toEqual({ type: "token", token: "tok-alice" });
  });

  it.each([
    ["the flag path wins over the environment and the home file", { flag: true, env: true, home: true }, "flag"],
    ["the environment wins over the home file", { flag: false, env: true, home: true }, "env"],
    ["the home file is the default", { flag: false, env: false, home: true }, "home"],
  ])("%s", async (_name, use, expected) => {
    const dir = tempDir();
    const doc = (who: string) => configDoc({ clusters: { c: { server: `https://${who}.test:1` } }, contexts: { x: { cluster: "c" } }, current: "x" });
    const flag = writeConfig(join(dir, "flag.yaml"), doc("flag"));
    const env = writeConfig(join(dir, "env.yaml"), doc("env"));
    writeConfig(join(dir, "home", ".platform", "config"), doc("home"));
    const loaded = await loadClientConfig({
      explicitPath: use.flag ? flag : undefined,
      env: { HOME: join(dir, "home"), ...(use.env ? { PLATFORMCONFIG: env } : {}) },
    });
    expect((await resolveRestConfig(loaded)).server).toBe(`https://${expected}.test:1`);
  });

  it("merges the PLATFORMCONFIG list with the first file winning per name and for current-context", async () => {
    const dir = tempDir();
    const first = writeConfig(join(dir, "a.yaml"), configDoc({ clusters: { shared: { server: "https://first.test:1" } }, users: { u1: { token: "one" } } }));
    const second = writeConfig(
      join(dir, "b.yaml"),
      configDoc({
        clusters: { shared: { server: "https://second.test:1" }, extra: { server: "https://extra.test:1" } },
        contexts: { ctx: { cluster: "shared", user: "u1" }, other: { cluster: "extra" } },
        current: "ctx",
      }),
    );
    const loaded = await loadClientConfig({ env: { PLATFORMCONFIG: `${first}:${join(dir, "missing.yaml")}:${second}`, HOME: dir } });
    expect(loaded.files).toEqual([first, second]);
    const config = await resolveRestConfig(loaded);
    expect([config.server, config.credentials]).toEqual(["https://first.test:1", { type: "token", token: "one" }]);
    expect((await resolveRestConfig(loaded, { context: "other" })).server).toBe("https://extra.test:1");
  });

  it("resolves relative file paths against the directory of the file that names them", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "ca.crt"), pki.ca);
    writeFileSync(join(dir, "token"), "from-file\n");
    const doc = configDoc({
      clusters: { c: { server: "https://127.0.0.1:1", "certificate-authority": "ca.crt" } },
      users: { u: { tokenFile: "token" }, e: { exec: { apiVersion: "client.authentication.platform.io/v1", command: "./bin/login", args: [] } } },
      contexts: { x: { cluster: "c", user: "u" }, y: { cluster: "c", user: "e" } },
      current: "x",
    });
    const loaded = await loadClientConfig({ explicitPath: writeConfig(join(dir, "nested", "..", "config"), doc) });
    const config = await resolveRestConfig(loaded);
    expect(config.tls.ca).toBe(pki.ca);
    expect(config.credentials).toEqual({ type: "token-file", path: join(dir, "token") });
    const exec = await resolveRestConfig(loaded, { context: "y" });
    expect(exec.credentials).toMatchObject({ type: "exec", exec: { command: join(dir, "bin", "login"), interactiveMode: "IfAvailable" } });
  });

  it("leaves a bare exec command name for the PATH lookup", async () => {
    const doc = configDoc({
      clusters: { c: { server: "https://h:1" } },
      users: { e: { exec: { apiVersion: "client.authentication.platform.io/v1beta1", command: "platform-login" } } },
      contexts: { x: { cluster: "c", user: "e" } },
      current: "x",
    });
    expect((await resolveDoc(doc)).credentials).toMatchObject({ exec: { command: "platform-login" } });
  });

  it.each([
    ["certificate and key files", { "client-certificate": "CERT", "client-key": "KEY" }],
    ["certificate and key data", { "client-certificate-data": "CERT64", "client-key-data": "KEY64" }],
  ])("reads a client certificate from %s", async (_name, fields) => {
    const user = Object.fromEntries(
      Object.entries(fields).map(([k, v]) => [
        k,
        { CERT: pki.client.certPath, KEY: pki.client.keyPath, CERT64: b64(pki.client.cert), KEY64: b64(pki.client.key) }[v],
      ]),
    );
    const doc = configDoc({
      clusters: { c: { server: "https://h:1", "certificate-authority-data": b64(pki.ca) } },
      users: { u: user },
      contexts: { x: { cluster: "c", user: "u" } },
      current: "x",
    });
    const config = await resolveDoc(doc);
    expect([config.tls.cert, config.tls.key, config.tls.ca]).toEqual([pki.client.cert, pki.client.key, pki.ca]);
  });

  it.each([
    ["a missing context", { contexts: {}, current: "gone" }, {}, /context "gone" \(current-context\) is not defined in \//],
    ["an unknown --context", {}, { context: "nope" }, /context "nope" \(--context\) is not defined/],
    ["an unknown --user", {}, { user: "bob" }, /user "bob" \(--user\) is not defined/],
    ["a context naming a missing cluster", { contexts: { x: { cluster: "absent" } }, current: "x" }, {}, /cluster "absent" \(context "x"\) is not defined/],
    ["no server anywhere", { clusters: {}, contexts: {}, current: undefined }, {}, /no API server address: pass --server/],
    ["both CA file and data", { clusters: { dev: { server: "https://h:1", "certificate-authority": "/x", "certificate-authority-data": "QQ==" } } }, {}, /expected `clusters\[0\]\.cluster\.certificate-authority` either certificate-authority or certificate-authority-data, not both, got both/],
    ["a CA with insecure-skip-tls-verify", { clusters: { dev: { server: "https://h:1", "certificate-authority": "/x", "insecure-skip-tls-verify": true } } }, {}, /cannot be combined with insecure-skip-tls-verify/],
    ["a CA file that does not exist", { clusters: { dev: { server: "https://h:1", "certificate-authority": "/nonexistent/ca.crt" } } }, {}, /clusters\[0\]\.cluster\.certificate-authority: cannot read \/nonexistent\/ca\.crt \(ENOENT\)/],
    ["CA data that is not PEM", { clusters: { dev: { server: "https://h:1", "certificate-authority-data": b64("hello") } } }, {}, /certificate-authority-data: no PEM block found/],
    ["CA data holding only a key", { clusters: { dev: { server: "https://h:1", "certificate-authority-data": "KEY" } } }, {}, /certificate-authority-data: holds no PEM CERTIFICATE block/],
    ["token and basic authentication together", { users: { alice: { token: "t", username: "a", password: "p" } } }, {}, /expected `users\[0\]\.user` one authentication method, got token, basic authentication/],
    ["a certificate without its key", { users: { alice: { "client-certificate-data": b64("x") } } }, {}, /expected `users\[0\]\.user\.client-key` to be set with the client certificate, got nothing/],
    ["an auth-provider", { users: { alice: { "auth-provider": { name: "oidc" } } } }, {}, /expected `users\[0\]\.user\.auth-provider` an exec credential plugin instead \(auth providers are not supported\), got auth provider "oidc"/],
    ["a server with a query", { clusters: { dev: { server: "https://h:1/?a=b" } } }, {}, /must not carry credentials, a query or a fragment/],
    ["a proxy-url that is not http", { clusters: { dev: { server: "https://h:1", "proxy-url": "socks5://p:1" } } }, {}, /expected `clusters\[0\]\.cluster\.proxy-url` an http:\/\/ proxy URL, got "socks5:\/\/p:1"/],
  ])("refuses %s with a CONFIG_INVALID naming it", async (_name, patch, overrides, message) => {
    const base = { clusters: { dev: { server: "https://127.0.0.1:6443" } }, users: { alice: { token: "t" } }, contexts: { dev: { cluster: "dev", user: "alice" } }, current: "dev" };
    const text = JSON.stringify(configDoc({ ...base, ...patch })).replace('"KEY"', JSON.stringify(b64(pki.client.key)));
    const err = await failure(resolveDoc(JSON.parse(text), overrides));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toMatch(message);
  });

  it("refuses a client key that does not belong to the certificate", async () => {
    const doc = configDoc({
      clusters: { c: { server: "https://h:1" } },
      users: { u: { "client-certificate": pki.client.certPath, "client-key": pki.server.keyPath } },
      contexts: { x: { cluster: "c", user: "u" } },
      current: "x",
    });
    const err = await failure(resolveDoc(doc));
    expect(err.message).toMatch(/users\[0\]\.user\.client-key: the private key does not belong to the certificate of .*client-certificate/);
  });

  it.each([
    ["malformed YAML", "clusters: [\n  - name: x\n    cluster: {server: ", /not valid YAML or JSON/],
    ["a repeated key", "current-context: a\ncurrent-context: b\n", /not valid YAML or JSON: .*unique/i],
    ["a list where a mapping belongs", "clusters:\n  - name: c\n    cluster: [1]\n", /expected `clusters\[0\]\.cluster` a mapping, got a list/],
    ["a number where a string belongs", "clusters:\n  - name: c\n    cluster:\n      server: 42\n", /expected `clusters\[0\]\.cluster\.server` a string, got 42/],
    ["a boolean as text", "clusters:\n  - name: c\n    cluster:\n      insecure-skip-tls-verify: \"yes\"\n", /expected `clusters\[0\]\.cluster\.insecure-skip-tls-verify` true or false, got "yes"/],
    ["bad base64", "users:\n  - name: u\n    user:\n      client-key-data: \"%%%\"\n", /expected `users\[0\]\.user\.client-key-data` base64 of the PEM text, got text that is not base64/],
    ["an entry without a name", "contexts:\n  - context: {cluster: c}\n", /expected `contexts\[0\]\.name` to be set, got nothing/],
    ["a name defined twice", "users:\n  - name: u\n    user: {}\n  - name: u\n    user: {}\n", /expected `users\[1\]\.name` a name not defined before in this file, got "u"/],
    ["an exec plugin without a command", "users:\n  - name: u\n    user:\n      exec: {apiVersion: client.authentication.platform.io/v1}\n", /expected `users\[0\]\.user\.exec\.command` to be set, got nothing/],
    ["an unknown interactiveMode", "users:\n  - name: u\n    user:\n      exec: {apiVersion: v, command: c, interactiveMode: Sometimes}\n", /expected `users\[0\]\.user\.exec\.interactiveMode` one of Never, IfAvailable, Always/],
    ["a wrong kind", "kind: Pod\n", /expected `kind` "Config", got "Pod"/],
  ])("names the file and field of %s", async (_name, text, message) => {
    const file = join(tempDir(), "config");
    writeFileSync(file, text);
    const err = await failure(loadClientConfig({ explicitPath: file }));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toContain(file);
    expect(err.message).toMatch(message);
  });

  it("collects every problem of a file as causes", async () => {
    const file = join(tempDir(), "config");
    writeFileSync(file, "clusters:\n  - name: c\n    cluster:\n      server: 1\n      tls-server-name: 2\n");
    const err = await failure(loadClientConfig({ explicitPath: file }));
    expect(err.message).toMatch(/: 2 problems: expected `clusters\[0\]\.cluster\.server` a string, got 1; expected `clusters\[0\]\.cluster\.tls-server-name` /);
    expect(err.causes.map((c) => c.field)).toEqual(["clusters[0].cluster.server", "clusters[0].cluster.tls-server-name"]);
  });

  it("refuses a --platformconfig path that does not exist, but skips missing PLATFORMCONFIG entries", async () => {
    const dir = tempDir();
    const err = await failure(loadClientConfig({ explicitPath: join(dir, "none") }));
    expect(err.message).toBe(`client config ${join(dir, "none")} does not exist`);
    const loaded = await loadClientConfig({ env: { PLATFORMCONFIG: join(dir, "none"), HOME: dir } });
    expect(loaded.files).toEqual([]);
  });

  it("lists the candidate files in precedence order", () => {
    expect(configCandidates({ env: { PLATFORMCONFIG: "a:b::a", HOME: "/h" }, cwd: "/w" })).toEqual([
      { path: "/w/a", required: false },
      { path: "/w/b", required: false },
    ]);
    expect(configCandidates({ env: { HOME: "/h" } })).toEqual([{ path: "/h/.platform/config", required: false }]);
    expect(configCandidates({ explicitPath: "c.yaml", env: { PLATFORMCONFIG: "a" }, cwd: "/w" })).toEqual([{ path: "/w/c.yaml", required: true }]);
  });

  it.each([
    ["platform.io", "client.authentication.platform.io/v1", undefined],
    ["platform.io", "client.authentication.platform.io/v1beta1", undefined],
    ["k8s.io", "client.authentication.k8s.io/v1", undefined],
    ["platform.io", "client.authentication.k8s.io/v1", /expected `users\[0\]\.user\.exec\.apiVersion` client\.authentication\.platform\.io\/v1 or client\.authentication\.platform\.io\/v1beta1/],
    ["platform.io", "client.authentication.platform.io/v2", /expected `users\[0\]\.user\.exec\.apiVersion` client\.authentication\.platform\.io\/v1 or .*, got "client\.authentication\.platform\.io\/v2"/],
  ])("with suffix %s, checks exec apiVersion %s", async (suffix, apiVersion, error) => {
    const doc = configDoc({
      clusters: { c: { server: "https://h:1", extensions: [{ name: `client.authentication.${suffix}/exec`, extension: { audience: "a" } }] } },
      users: { u: { exec: { apiVersion, command: "login" } } },
      contexts: { x: { cluster: "c", user: "u" } },
      current: "x",
    });
    const result = resolveDoc(doc, {}, { groupSuffix: suffix });
    if (error) {
      expect((await failure(result)).message).toMatch(error);
    } else {
      expect((await result).credentials).toMatchObject({ type: "exec", exec: { apiVersion, clusterConfig: { audience: "a" } } });
    }
  });
});
