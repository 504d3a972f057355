// The test webhook server of platform-ca/testing on its own: HTTPS with its CA, the token and path it requires, the
// answers of decide, recorded requests, and its behaviours (down, malformed, an HTTP status, slow).
import https from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { reviewAnswer, startTestWebhookServer, type TestWebhookServer } from "../src/testing.js";

let hook: TestWebhookServer;
beforeAll(async () => {
  hook = await startTestWebhookServer({
    path: "/review",
    token: "t",
    decide: (body) => {
      if (typeof body === "string") throw new Error("not a review");
      return (body as { kind?: string }).kind === "Nothing" ? undefined : reviewAnswer(body, "status", { allowed: true });
    },
  });
});
afterAll(() => hook.close());

/** POSTs `body` to `path` trusting only the server's CA; resolves with the status and text, or the connection error. */
function post(path: string, body: string, token = "t"): Promise<{ status: number; text: string } | { error: string }> {
  const url = new URL(hook.url);
  return new Promise((resolve) => {
    const req = https.request({ host: url.hostname, port: url.port, path, method: "POST", ca: hook.caPem, agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c)).on("end", () => resolve({ status: res.statusCode!, text }));
    });
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end(body);
  });
}

describe("startTestWebhookServer", () => {
  it("answers decide's JSON over TLS its CA verifies, 204 for undefined, and records every request", async () => {
    const before = hook.requests.length;
    expect(await post("/review", '{"apiVersion":"x/v1","kind":"Review"}')).toEqual({ status: 200, text: '{"apiVersion":"x/v1","kind":"Review","status":{"allowed":true}}' });
    expect(await post("/review", '{"kind":"Nothing"}')).toEqual({ status: 204, text: "" });
    // A body that is not JSON reaches decide as text; decide throwing answers 500 with its message.
    expect(await post("/review", "not json")).toEqual({ status: 500, text: "decide failed: not a review" });
    expect(hook.requests.slice(before).map((r) => r.body)).toEqual([{ apiVersion: "x/v1", kind: "Review" }, { kind: "Nothing" }, "not json"]);
  });

  it("requires its token and path, and writes both into its client config", async () => {
    expect(await post("/review", "{}", "wrong")).toMatchObject({ status: 401 });
    expect(await post("/other", "{}")).toMatchObject({ status: 404 });
    const config = parse(hook.clientConfig());
    expect(config.clusters[0].cluster.server).toBe(hook.url);
    expect(Buffer.from(config.clusters[0].cluster["certificate-authority-data"], "base64").toString()).toBe(hook.caPem);
    expect(config.users[0].user).toEqual({ token: "t" });
  });

  it("resets connections when down, breaks the JSON when malformed, answers a set status, and waits delayMs", async () => {
    try {
      hook.behaviour = "down";
      expect(await post("/review", "{}")).toHaveProperty("error");
      hook.behaviour = "malformed";
      expect(await post("/review", "{}")).toEqual({ status: 200, text: '{"apiVersion": ' });
      hook.behaviour = { status: 503 };
      expect(await post("/review", "{}")).toMatchObject({ status: 503 });
      hook.behaviour = "normal";
      hook.delayMs = 200;
      const start = Date.now();
      expect(await post("/review", "{}")).toMatchObject({ status: 200 });
      expect(Date.now() - start).toBeGreaterThanOrEqual(190);
    } finally {
      hook.behaviour = "normal";
      hook.delayMs = 0;
    }
  });
});
