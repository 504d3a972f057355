// Requests past their deadline: a slow write or read is answered 504 with upstream's Timeout Status near its
// `timeout` (capped by the server's request timeout), audited so, while the write itself still lands; watches are
// exempt and last --min-request-timeout to twice that without timeoutSeconds.
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { MemoryAuditSink } from "../../../src/audit/memory-sink.js";
import { parseAuditPolicy } from "../../../src/config/audit-policy.js";
import { SWEEP_MS, TIMEOUT_MESSAGE } from "../../../src/apiserver/http/request-timeout.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import type { KeyValue } from "../../../src/apiserver/storage/types.js";
import { serviceAccount } from "../../fixtures/objects.js";
import { until } from "../../fixtures/wait.js";
import { SA_PATH, serverFixture } from "../fixtures.js";
import { call, openWatch } from "../http-client.js";

/** Memory storage whose creates and reads wait from `pause()` until `resume()`. */
class SlowStorage extends MemoryStorage {
  #held: Promise<void> | undefined;
  #resume: () => void = () => undefined;
  pause(): void {
    this.#held = new Promise((resolve) => (this.#resume = resolve));
  }
  resume(): void {
    this.#held = undefined;
    this.#resume();
  }
  override async create(key: string, value: string): Promise<KeyValue<string>> {
    await this.#held;
    return super.create(key, value);
  }
  override async get(key: string): Promise<KeyValue<string> | undefined> {
    await this.#held;
    return super.get(key);
  }
}

const policy = parseAuditPolicy(stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] }), "policy").policy;

/** Upstream's body, as kubectl and client-go read it. */
const TIMEOUT_STATUS = { kind: "Status", apiVersion: "v1", status: "Failure", message: TIMEOUT_MESSAGE, reason: "Timeout", code: 504 };

describe("a request past its deadline", () => {
  it("is answered 504 Timeout at its `timeout`, audited as such, while the slow write still lands", async () => {
    const storage = new SlowStorage();
    const sink = new MemoryAuditSink();
    const server = await serverFixture({ storage, audit: { policy, sink } });
    try {
      storage.pause();
      const started = Date.now();
      const r = await call(server.address, "POST", `${SA_PATH}?timeout=1s`, { body: serviceAccount({ name: "late" }), headers: { "audit-id": "late-1" } });
      const took = Date.now() - started;
      expect(r.status).toBe(504);
      expect(r.body).toEqual({ ...TIMEOUT_STATUS, metadata: {} });
      expect(took).toBeGreaterThanOrEqual(1000);
      expect(took).toBeLessThan(1000 + SWEEP_MS + 400);
      expect(sink.byId("late-1").map((e) => [e.stage, e.responseStatus])).toEqual([
        ["RequestReceived", undefined],
        ["ResponseComplete", { metadata: {}, status: "Failure", message: TIMEOUT_MESSAGE, reason: "Timeout", code: 504 }],
      ]);
      // The handler goes on: once storage answers, the object is stored, and its own 201 is dropped (no second event).
      storage.resume();
      await until(async () => (await call(server.address, "GET", `${SA_PATH}/late`)).status === 200, "the late write to be stored");
      expect(sink.byId("late-1")).toHaveLength(2);
      const scraped = (await server.metrics.scrape()).body;
      expect(scraped).toMatch(/apiserver_request_total\{[^}]*verb="POST"[^}]*code="504"[^}]*\} 1/);
      // Upstream's count of requests the server ended itself, with the request's labels.
      expect(scraped).toMatch(/apiserver_request_terminations_total\{verb="POST",group="",version="v1",resource="serviceaccounts",subresource="",scope="[a-z]+",component="apiserver",code="504"\} 1/);
    } finally {
      storage.resume();
      await server.stop();
    }
  });

  it("is cut at the server's request timeout when its own `timeout` is larger, and a read too", async () => {
    const storage = new SlowStorage();
    const server = await serverFixture({ storage, requestTimeoutMs: 700 });
    try {
      await call(server.address, "POST", SA_PATH, { body: serviceAccount({ name: "there" }) });
      storage.pause();
      for (const path of [`${SA_PATH}/there?timeout=1m`, `${SA_PATH}/there`]) {
        const started = Date.now();
        const r = await call(server.address, "GET", path);
        expect([path, r.status, r.body?.reason]).toEqual([path, 504, "Timeout"]);
        expect(Date.now() - started).toBeGreaterThanOrEqual(700);
        expect(Date.now() - started).toBeLessThan(700 + SWEEP_MS + 400);
      }
      // A shorter `timeout` of its own still wins.
      const started = Date.now();
      expect((await call(server.address, "GET", `${SA_PATH}/there?timeout=300ms`)).status).toBe(504);
      expect(Date.now() - started).toBeLessThan(300 + SWEEP_MS + 300);
      storage.resume();
      expect((await call(server.address, "GET", `${SA_PATH}/there?timeout=300ms`)).status).toBe(200);
    } finally {
      storage.resume();
      await server.stop();
    }
  });

  it("does not cut a watch: it outlives the request timeout and still gets events", async () => {
    const server = await serverFixture({ requestTimeoutMs: 300 });
    try {
      const watch = await openWatch(server.address, `${SA_PATH}?watch=true&resourceVersion=${(await call(server.address, "GET", SA_PATH)).body.metadata.resourceVersion}`);
      try {
        expect(watch.status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 900));
        await call(server.address, "POST", SA_PATH, { body: serviceAccount({ name: "seen-late" }) });
        expect(await watch.next()).toMatchObject({ type: "ADDED", object: { metadata: { name: "seen-late" } } });
      } finally {
        watch.close();
      }
    } finally {
      await server.stop();
    }
  });

  it("ends a watch without timeoutSeconds between --min-request-timeout and twice that, as upstream", async () => {
    const server = await serverFixture({ minRequestTimeoutSeconds: 1 });
    try {
      const started = Date.now();
      const watch = await openWatch(server.address, `${SA_PATH}?watch=true`);
      await watch.ended;
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(Date.now() - started).toBeLessThan(2500);
    } finally {
      await server.stop();
    }
  });
});
