// The co-located controllers' unix-domain socket: owner-only, authenticated as the controller identity, and refused
// (401 without the token, 403 beyond the controller role) exactly as a request on the TLS port would be.
import { existsSync, statSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { LOCAL_SOCKET_FILE, newLocalConnection } from "../../../src/apiserver/bootstrap/local-socket.js";
import { runSecureServer, type Component, type ComponentContext } from "../../../src/apiserver/bootstrap/run-server.js";
import { createClient } from "../../../src/client/rest-client.js";
import { silentLogger } from "../../../src/logger.js";
import { tempDir } from "../../fixtures/temp-dir.js";

function call(socketPath: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<{ status: number; body: any }> {
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { ...headers, ...(data && { "Content-Type": "application/json", "Content-Length": String(data.length) }) } }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on("error", reject);
    req.end(data);
  });
}

const names = groupNames();

async function up(localConnection: boolean) {
  const dataDir = tempDir();
  const controller = new AbortController();
  let context: ComponentContext | undefined;
  const capture: Component = { name: "capture", start: async (ctx) => void (context = ctx) };
  let started!: () => void;
  const ready = new Promise<void>((resolve) => (started = resolve));
  const done = runSecureServer({ dataDir, listen: { host: "127.0.0.1", port: 0 }, logger: silentLogger(), signal: controller.signal, write: () => started(), banner: "up", components: [capture], localConnection });
  await Promise.race([ready, done]);
  return { dataDir, context: context!, stop: () => (controller.abort(), done) };
}

/** Runs `check` against a fresh server and stops it whatever happens; returns the data directory. */
async function withUp(localConnection: boolean, check: (context: ComponentContext, dataDir: string) => Promise<void>): Promise<string> {
  const server = await up(localConnection);
  try {
    await check(server.context, server.dataDir);
  } finally {
    await server.stop();
  }
  return server.dataDir;
}

describe("the local socket of up", () => {
  it("is owner-only and serves the controller identity given the token", async () => {
    const dataDir = await withUp(true, async ({ local }, dir) => {
      expect(local!.socketPath).toBe(join(dir, LOCAL_SOCKET_FILE));
      expect(statSync(local!.socketPath).mode & 0o777).toBe(0o600);
      const review = await call(local!.socketPath, "POST", `/apis/${names.authentication}/v1/selfsubjectreviews`, { Authorization: `Bearer ${local!.token}` }, {
        apiVersion: `${names.authentication}/v1`,
        kind: "SelfSubjectReview",
      });
      expect(review.status).toBe(201);
      expect(review.body.status.userInfo.username).toBe("system:platform-ca:controller");
      // The controllers' own client, over the socket.
      const client = createClient({ server: "http://localhost", socketPath: local!.socketPath, tls: {}, credentials: { type: "token", token: local!.token }, namespace: "default", qps: 0, burst: 1, userAgent: "test" });
      try {
        const csrs = await client.request<{ items: unknown[] }>("GET", `/apis/${names.certificates}/v1/certificatesigningrequests`);
        expect(csrs.items).toEqual([]);
      } finally {
        client.close();
      }
    });
    expect(existsSync(join(dataDir, LOCAL_SOCKET_FILE))).toBe(false);
  });

  it("refuses a connection without the token (401) or with a wrong one", async () => {
    await withUp(true, async ({ local }) => {
      const none = await call(local!.socketPath, "GET", "/api/v1/namespaces");
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ kind: "Status", reason: "Unauthorized", code: 401 });
      const wrong = await call(local!.socketPath, "GET", "/api/v1/namespaces", { Authorization: `Bearer ${local!.token.slice(0, -1)}x` });
      expect(wrong.status).toBe(401);
    });
  });

  it("refuses a write the controller role does not allow (403), as RBAC does on the TLS port", async () => {
    await withUp(true, async ({ local }) => {
      const auth = { Authorization: `Bearer ${local!.token}` };
      const binding = await call(local!.socketPath, "POST", `/apis/${names.rbac}/v1/clusterrolebindings`, auth, {
        apiVersion: `${names.rbac}/v1`,
        kind: "ClusterRoleBinding",
        metadata: { name: "escalate" },
        roleRef: { apiGroup: names.rbac, kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ kind: "User", apiGroup: names.rbac, name: "system:platform-ca:controller" }],
      });
      expect(binding.status).toBe(403);
      expect(binding.body).toMatchObject({ kind: "Status", reason: "Forbidden", code: 403 });
      expect(binding.body.message).toContain('User "system:platform-ca:controller" cannot create resource "clusterrolebindings"');
      const ns = await call(local!.socketPath, "DELETE", "/api/v1/namespaces/default", auth);
      expect(ns.status).toBe(403);
    });
  });

  it("draws a fresh token per run, and gives up on a data directory too long for a socket address", () => {
    const [a, b] = [newLocalConnection("/srv/data"), newLocalConnection("/srv/data")];
    expect(a!.connection.socketPath).toBe(`/srv/data/${LOCAL_SOCKET_FILE}`);
    expect(a!.connection.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a!.connection.token).not.toBe(b!.connection.token);
    expect(a!.credential).toMatchObject({ secret: a!.connection.token, user: { username: "system:platform-ca:controller", groups: [] } });
    expect(newLocalConnection(`/${"d".repeat(100)}`)).toBeUndefined();
  });

  it("is not served unless asked for", async () => {
    const dataDir = await withUp(false, async ({ local }) => expect(local).toBeUndefined());
    expect(existsSync(join(dataDir, LOCAL_SOCKET_FILE))).toBe(false);
  });
});
