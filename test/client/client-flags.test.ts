// The inherited client flags: precedence over the client config file, --request-timeout, commander registration.
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addClientFlags, parseRequestTimeout, restConfigFromFlags, type ClientFlags } from "../../src/client/client-flags.js";
import { restConfigFromConnection } from "../../src/client/connection-config.js";
import { isPlatformError } from "../../src/errors.js";
import { configDoc, writeConfig } from "./fixtures/config.js";
import { createTestPki, type TestPki } from "./fixtures/pki.js";
import { tempDir } from "../fixtures/temp-dir.js";

let pki: TestPki;
let file: string;
beforeAll(() => {
  pki = createTestPki();
  file = writeConfig(
    join(tempDir(), "config"),
    configDoc({
      clusters: {
        prod: { server: "https://prod.test:6443", "certificate-authority-data": Buffer.from(pki.ca).toString("base64"), "tls-server-name": "api.prod" },
        staging: { server: "https://staging.test:6443" },
      },
      users: {
        robot: { exec: { apiVersion: "client.authentication.platform.io/v1", command: "login" }, as: "file-user", "as-groups": ["file-group"] },
        carol: { username: "carol", password: "secret" },
      },
      contexts: { prod: { cluster: "prod", user: "robot", namespace: "ops" }, staging: { cluster: "staging", user: "carol" } },
      current: "prod",
    }),
  );
});
afterAll(() => pki.remove());

const env = () => ({ HOME: tempDir() });

describe("client flags", () => {
  it("uses the file when no flag is given", async () => {
    const config = await restConfigFromFlags({ platformconfig: file }, env());
    expect(config).toMatchObject({
      server: "https://prod.test:6443",
      namespace: "ops",
      credentials: { type: "exec" },
      tls: { ca: pki.ca, serverName: "api.prod" },
      impersonate: { user: "file-user", groups: ["file-group"] },
      timeoutMs: 0,
    });
  });

  it.each<[string, ClientFlags, Record<string, unknown>]>([
    ["--tls-server-name with --server is kept", { server: "https://10.0.0.1:1", tlsServerName: "api.test" }, { tls: { serverName: "api.test" } }],
    ["--token replaces the exec plugin", { token: "flag-token" }, { credentials: { type: "token", token: "flag-token" } }],
    ["--username and --password replace the exec plugin", { username: "u", password: "p" }, { credentials: { type: "basic", username: "u", password: "p" } }],
    ["--namespace wins over the context", { namespace: "kube" }, { namespace: "kube" }],
    ["--as and --as-group replace the file's impersonation", { as: "eve", asGroup: ["g1", "g2"], asUid: "42" }, { impersonate: { user: "eve", groups: ["g1", "g2"], uid: "42" } }],
    ["--context selects another context", { context: "staging" }, { server: "https://staging.test:6443", credentials: { type: "basic", username: "carol", password: "secret" }, namespace: "default" }],
    ["--cluster and --user mix entries", { cluster: "staging", user: "carol" }, { server: "https://staging.test:6443", namespace: "ops" }],
    ["--request-timeout sets the per-request limit", { requestTimeout: "1m30s" }, { timeoutMs: 90_000 }],
    ["--disable-compression is carried", { disableCompression: true }, { disableCompression: true }],
  ])("%s", async (_name, flags, expected) => {
    expect(await restConfigFromFlags({ platformconfig: file, ...flags }, env())).toMatchObject(expected);
  });

  it("--server replaces the address and drops the file's tls-server-name", async () => {
    const config = await restConfigFromFlags({ platformconfig: file, server: "127.0.0.1:7443" }, env());
    expect([config.server, config.tls]).toEqual(["https://127.0.0.1:7443", { ca: pki.ca }]);
  });

  it("--insecure-skip-tls-verify drops the file's CA", async () => {
    const config = await restConfigFromFlags({ platformconfig: file, insecureSkipTlsVerify: true }, env());
    expect(config.tls).toEqual({ insecureSkipVerify: true, serverName: "api.prod" });
  });

  it("works with flags alone when no file exists", async () => {
    const config = await restConfigFromFlags(
      { server: "https://127.0.0.1:1", certificateAuthority: pki.caPath, clientCertificate: pki.client.certPath, clientKey: pki.client.keyPath },
      env(),
    );
    expect(config).toMatchObject({ server: "https://127.0.0.1:1", namespace: "default", credentials: { type: "none" }, tls: { ca: pki.ca, cert: pki.client.cert, key: pki.client.key } });
  });

  it("reads PLATFORMCONFIG from the environment it is given", async () => {
    const config = await restConfigFromFlags({}, { ...env(), PLATFORMCONFIG: file });
    expect(config.server).toBe("https://prod.test:6443");
  });

  it.each<[string, ClientFlags, RegExp]>([
    ["a client certificate without its key", { server: "https://h:1", clientCertificate: "/c" }, /expected `--client-key` to be set with --client-certificate/],
    ["groups without a user to impersonate", { server: "https://h:1", asGroup: ["g"] }, /expected `--as` to name the user to impersonate/],
    ["a password without a username", { server: "https://h:1", password: "p" }, /expected `--username` to be set with --password/],
  ])("refuses %s as a usage error", async (_name, flags, message) => {
    const err = await restConfigFromFlags(flags, env()).catch((e: unknown) => e);
    expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
    expect((err as Error).message).toMatch(message);
  });

  it.each([
    ["0", 0],
    ["5", 5000],
    ["1s", 1000],
    ["2m", 120_000],
    ["3h", 10_800_000],
    ["1m30s", 90_000],
    ["1.5s", 1500],
    ["250ms", 250],
  ])("reads --request-timeout %s as %i ms", (text, ms) => {
    expect(parseRequestTimeout(text)).toBe(ms);
  });

  it.each(["", "abc", "1x", "-1s", "1 s", "s"])("refuses --request-timeout %j", (text) => {
    expect(() => parseRequestTimeout(text)).toThrow(/expected `--request-timeout` to be 0, whole seconds, or a duration/);
  });

  it("registers the inherited options on a command and reads repeated --as-group", async () => {
    let seen: ClientFlags | undefined;
    const program = addClientFlags(new Command("t").exitOverride()).action((flags: ClientFlags) => {
      seen = flags;
    });
    await program.parseAsync(["-s", "https://h:1", "--as", "x", "--as-group", "a", "--as-group", "b", "--insecure-skip-tls-verify", "-n", "ns", "--request-timeout", "2s"], { from: "user" });
    const config = await restConfigFromFlags(seen!, env());
    expect(config).toMatchObject({ server: "https://h:1", namespace: "ns", timeoutMs: 2000, tls: { insecureSkipVerify: true }, impersonate: { user: "x", groups: ["a", "b"] } });
  });

  it("builds a RestConfig from a ClientConnectionConfiguration", async () => {
    const config = await restConfigFromConnection({ kubeconfig: file, qps: 50, burst: 100, contentType: "application/json", acceptContentTypes: "application/json" }, { env: env() });
    expect(config).toMatchObject({ server: "https://prod.test:6443", qps: 50, burst: 100, accept: "application/json", contentType: "application/json" });
    await expect(restConfigFromConnection({ kubeconfig: file, contentType: "application/vnd.kubernetes.protobuf" })).rejects.toThrow(
      /expected `clientConnection.contentType` to be application\/json/,
    );
  });
});
