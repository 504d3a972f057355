// Bearer token, token file, basic authentication and client certificates as they reach a real server.
import { Buffer } from "node:buffer";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restConfigFromFlags } from "../../src/client/client-flags.js";
import { createClient } from "../../src/client/rest-client.js";
import type { Credentials, RestConfig } from "../../src/client/rest-config.js";
import { AgentPool } from "../../src/client/transport.js";
import { createLogger } from "../../src/logger.js";
import { configDoc, restConfig, writeConfig } from "./fixtures/config.js";
import { createTestPki, type TestPki } from "./fixtures/pki.js";
import { sendJson, sendStatus, startServer, type TestServer } from "./fixtures/server.js";
import { failure } from "./fixtures/failure.js";
import { tempDir } from "../fixtures/temp-dir.js";

let pki: TestPki;
let echo: TestServer;
let mtls: TestServer;
beforeAll(async () => {
  pki = createTestPki();
  echo = await startServer((req, res) =>
    req.headers.authorization === "Bearer revoked" ? sendStatus(res, 401, "Unauthorized", "Unauthorized") : sendJson(res, 200, { auth: req.headers.authorization ?? null }),
  );
  mtls = await startServer((req, res) => sendJson(res, 200, { cn: req.clientCn ?? null, auth: req.headers.authorization ?? null }), {
    tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.ca, requireClientCert: true },
  });
});
afterAll(async () => {
  await Promise.all([echo.close(), mtls.close()]);
  pki.remove();
});

function client(credentials: Credentials, extra: Partial<RestConfig> = {}, logger = createLogger({ level: "silent" })) {
  return createClient(restConfig({ server: echo.url, credentials, ...extra }), { agents: new AgentPool(), logger });
}

describe("credentials", () => {
  it.each<[string, Credentials, string | null]>([
    ["a bearer token", { type: "token", token: "abc.def" }, "Bearer abc.def"],
    ["basic authentication", { type: "basic", username: "carol", password: "s3cr:t" }, `Basic ${Buffer.from("carol:s3cr:t").toString("base64")}`],
    ["nothing without credentials", { type: "none" }, null],
  ])("sends %s", async (_name, credentials, header) => {
    expect(await client(credentials).request("GET", "/x")).toEqual({ auth: header });
  });

  it("re-reads a token file when it changes", async () => {
    const file = join(tempDir(), "token");
    writeFileSync(file, "first\n");
    const c = client({ type: "token-file", path: file });
    expect(await c.request("GET", "/x")).toEqual({ auth: "Bearer first" });
    writeFileSync(file, "second-token\n");
    expect(await c.request("GET", "/x")).toEqual({ auth: "Bearer second-token" });
  });

  it("re-reads a token file once after a 401, then reports UNAUTHORIZED", async () => {
    const file = join(tempDir(), "token");
    writeFileSync(file, "revoked");
    const before = echo.requests.length;
    const err = await failure(client({ type: "token-file", path: file }).request("GET", "/x"));
    expect([err.code, err.httpStatus]).toEqual(["UNAUTHORIZED", 401]);
    expect(echo.requests.length - before).toBe(2);
  });

  it("does not repeat a request with a static token after a 401", async () => {
    const before = echo.requests.length;
    const err = await failure(client({ type: "token", token: "revoked" }).request("GET", "/x"));
    expect(err.code).toBe("UNAUTHORIZED");
    expect(echo.requests.length - before).toBe(1);
  });

  it.each([
    ["missing", undefined, /cannot read the token file .*token \(ENOENT\)/],
    ["empty", "  \n", /the token file .*token is empty/],
  ])("refuses a token file that is %s with CREDENTIALS_UNAVAILABLE", async (_name, content, message) => {
    const file = join(tempDir(), "token");
    if (content !== undefined) writeFileSync(file, content);
    const err = await failure(client({ type: "token-file", path: file }).request("GET", "/x"));
    expect(err.code).toBe("CREDENTIALS_UNAVAILABLE");
    expect(err.message).toMatch(message);
  });

  it("authenticates with the client certificate of a config file over mutual TLS, together with a token", async () => {
    const file = writeConfig(
      join(tempDir(), "config"),
      configDoc({
        clusters: { c: { server: mtls.url, "certificate-authority": pki.caPath } },
        users: { alice: { "client-certificate-data": Buffer.from(pki.client.cert).toString("base64"), "client-key": pki.client.keyPath, token: "t0k" } },
        contexts: { x: { cluster: "c", user: "alice" } },
        current: "x",
      }),
    );
    const config = await restConfigFromFlags({ platformconfig: file }, { HOME: tempDir() });
    const c = createClient(config, { agents: new AgentPool() });
    expect(await c.request("GET", "/whoami")).toEqual({ cn: "alice", auth: "Bearer t0k" });
    c.close();
  });

  it("never writes tokens, passwords or keys to the log", async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ level: "trace", destination });
    await client({ type: "token", token: "super-secret-token" }, { impersonate: { user: "u" } }, logger).request("GET", "/x");
    await client({ type: "basic", username: "u", password: "pa55word-secret" }, {}, logger).request("GET", "/x");
    await failure(client({ type: "token", token: "revoked" }, {}, logger).request("GET", "/x"));
    const text = lines.join("");
    expect(text).toContain("request done");
    for (const secret of ["super-secret-token", "pa55word-secret", Buffer.from("u:pa55word-secret").toString("base64"), "revoked"]) expect(text).not.toContain(secret);
  });
});
