// Authentication of the secure server over real HTTPS: each refused credential (401) beside its accepted counterpart.
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { connect as tlsConnect } from "node:tls";
import { describe, expect, it } from "vitest";
import { TOKENS, useSecureFixture, type SecureFixture, whoAmI, selfSubjectReview } from "./fixtures.js";
import { testCa } from "../../fixtures/ca.js";

const fx = useSecureFixture({ clientCa: async () => (await testCa({ commonName: "extra client CA" })).certPem });

async function serviceAccountToken(f: SecureFixture, name: string, expirationSeconds = 3600): Promise<string> {
  const admin = { token: TOKENS.admin };
  await f.call("POST", "/api/v1/namespaces/default/serviceaccounts", { ...admin, body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name } } });
  const r = await f.call("POST", `/api/v1/namespaces/default/serviceaccounts/${name}/token`, {
    ...admin,
    body: { apiVersion: `${f.names.authentication}/v1`, kind: "TokenRequest", spec: { expirationSeconds } },
  });
  expect(r.status).toBe(201);
  return r.body.status.token;
}

describe("the secure server refuses what it cannot authenticate (401) and accepts the counterpart", () => {
  it("refuses a request without credentials and accepts the same request with a token", async () => {
    const f = fx();
    const refused = await f.call("GET", "/api/v1/namespaces");
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ kind: "Status", reason: "Unauthorized", message: expect.stringMatching(/no credentials were presented/) });
    expect((await f.call("GET", "/api/v1/namespaces", { token: TOKENS.admin })).status).toBe(200);
  });

  it.each([
    ["an unknown token", "not-a-token"],
    ["a token differing in one character", `${TOKENS.admin.slice(0, -1)}X`],
    ["a JWT from nobody", "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln"],
  ])("refuses %s", async (_name, token) => {
    const r = await whoAmI(fx(), { token });
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/invalid bearer token/);
  });

  it("accepts a token from the token file as its user", async () => {
    const r = await whoAmI(fx(), { token: TOKENS.bob });
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "bob", uid: "uid-bob", groups: ["devs", "system:authenticated"] });
  });

  it("refuses a ServiceAccount token once it has expired on the server's clock, and accepts a fresh one", async () => {
    const f = fx();
    const token = await serviceAccountToken(f, "short-lived", 600);
    expect((await whoAmI(f, { token })).body.status.userInfo.username).toBe("system:serviceaccount:default:short-lived");
    f.clock.tick((600 + 61) * 1000);
    const expired = await whoAmI(f, { token });
    expect(expired.status).toBe(401);
    expect(expired.body.message).toMatch(/invalid ServiceAccount token: the token has expired/);
    const fresh = await whoAmI(f, { token: await serviceAccountToken(f, "short-lived-2", 600) });
    expect(fresh.status).toBe(201);
  });

  it("authenticates a client certificate from the cluster CA as CN and O", async () => {
    const f = fx();
    const cert = await f.clientCert({ cn: "carol", o: ["team-a", "team-b"] });
    const r = await whoAmI(f, { cert });
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "carol", groups: ["team-a", "team-b", "system:authenticated"] });
  });

  it("accepts a client certificate from a CA given with --client-ca-file", async () => {
    const f = fx();
    const r = await whoAmI(f, { cert: await f.clientCert({ cn: "erin", issuer: await testCa({ commonName: "extra client CA" }) }) });
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo.username).toBe("erin");
  });

  it("refuses a client certificate from another CA", async () => {
    const f = fx();
    const cert = await f.clientCert({ cn: "mallory", o: ["system:masters"], issuer: await testCa({ commonName: "another CA" }) });
    const r = await whoAmI(f, { cert });
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/x509: certificate signed by unknown authority/);
  });

  it.each([
    ["expired", { from: -7200, to: -3600 }, /x509: certificate has expired/],
    ["not yet valid", { from: 86_400, to: 2 * 86_400 }, /x509: certificate is not yet valid/],
    ["without client auth", { usages: ["digital signature", "server auth"] }, /client auth is required/],
  ])("refuses a client certificate from the cluster CA that is %s", async (_name, o, message) => {
    const f = fx();
    const r = await whoAmI(f, { cert: await f.clientCert({ cn: "dave", ...o }) });
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(message);
  });

  it("falls back to the token when a refused certificate comes with a valid token", async () => {
    const f = fx();
    const cert = await f.clientCert({ cn: "dave", from: -7200, to: -3600 });
    const r = await whoAmI(f, { cert, token: TOKENS.alice });
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo.username).toBe("alice");
  });

  it("refuses basic credentials, which this server does not take", async () => {
    const r = await whoAmI(fx(), { headers: { authorization: `Basic ${Buffer.from("admin:admin").toString("base64")}` } });
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/basic authentication is not supported/);
  });
});

describe("with --anonymous-auth", () => {
  const anon = useSecureFixture({ anonymous: true });

  it("serves a request without credentials as system:anonymous, within what RBAC grants it", async () => {
    const f = anon();
    expect((await f.call("GET", "/version")).status).toBe(200);
    const listed = await f.call("GET", "/api/v1/namespaces");
    expect(listed.status).toBe(403);
    expect(listed.body.message).toBe('namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope');
  });

  it("still refuses a wrong token instead of falling back to anonymous", async () => {
    const r = await anon().call("GET", "/version", { token: "wrong" });
    expect(r.status).toBe(401);
  });
});

describe("client certificates on a kept-alive connection", () => {
  /** Requests over one TLS connection (a keep-alive agent with a single socket). */
  function onOneConnection(f: SecureFixture, cert: { pem: string; keyPem: string }) {
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, cert: cert.pem, key: cert.keyPem, rejectUnauthorized: false });
    const sockets = new Set<unknown>();
    agent.on("free", (socket) => sockets.add(socket));
    const url = new URL(f.state.server.address);
    const whoami = () =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = httpsRequest(
          { host: url.hostname, port: url.port, path: selfSubjectReview(f).path, method: "POST", agent, headers: { "content-type": "application/json" } },
          (res) => {
            let text = "";
            res.on("data", (c) => (text += c));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(selfSubjectReview(f).body));
      });
    return { whoami, sockets, close: () => agent.destroy() };
  }

  it("checks the certificate's validity at every request, not once per connection", async () => {
    const f = fx();
    // Valid from T0 to T0 + 2 h; the fixture's clock starts at T0 + 1 min.
    const cert = await f.clientCert({ cn: "kept", from: 0, to: 7200 });
    const c = onOneConnection(f, cert);
    try {
      expect((await c.whoami()).body.status.userInfo.username).toBe("kept");
      expect((await c.whoami()).status).toBe(201);
      f.clock.tick(3 * 3600_000);
      const late = await c.whoami();
      expect(late.status).toBe(401);
      expect(late.body.message).toMatch(/x509: certificate has expired/);
      expect(c.sockets.size).toBe(1); // all of it on one connection
    } finally {
      f.clock.tick(-3 * 3600_000);
      c.close();
    }
  });

  it("refuses TLS renegotiation, so a connection cannot swap its client certificate", async () => {
    const f = fx();
    const cert = await f.clientCert({ cn: "renegotiator" });
    const url = new URL(f.state.server.address);
    const outcome = await new Promise<string>((resolve) => {
      const socket = tlsConnect({ host: url.hostname, port: Number(url.port), cert: cert.pem, key: cert.keyPem, rejectUnauthorized: false, maxVersion: "TLSv1.2" }, () => {
        const started = socket.renegotiate({ rejectUnauthorized: false }, (err) => resolve(err ? `refused: ${err.message}` : "renegotiated"));
        if (!started) resolve("refused: not started");
        // Data drives the new handshake forward.
        socket.write(`GET /healthz HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`);
      });
      socket.on("error", (err) => resolve(`refused: ${err.message}`));
      socket.on("close", () => resolve("refused: connection closed"));
    });
    expect(outcome).toMatch(/^refused/);
  });
});
