// The client against the embedded API server, in process over loopback HTTP (skipped when the server is absent).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import { createClient, type RestClient } from "../../src/client/rest-client.js";
import { AgentPool } from "../../src/client/transport.js";
import type { ResourceClient } from "../../src/client/types.js";
import { isPlatformError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { restConfig } from "./fixtures/config.js";

const SRC = new URL("../../src/apiserver/", import.meta.url);
const present = ["server.ts", "pipeline.ts", "storage/memory.ts"].every((f) => existsSync(fileURLToPath(new URL(f, SRC))));

interface Server {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly address: string;
}

let server: Server;
let client: RestClient;
let accounts: ResourceClient;

beforeAll(async () => {
  if (!present) return;
  // Loaded by path so this file compiles whatever shape the server module takes meanwhile.
  const load = (f: string) => import(new URL(f, SRC).href);
  const [{ createApiServer }, { insecureLocalPipeline }, { MemoryStorage }] = await Promise.all([load("server.ts"), load("pipeline.ts"), load("storage/memory.ts")]);
  server = createApiServer({ storage: new MemoryStorage({ retention: { revisions: 3 } }), pipeline: insecureLocalPipeline(silentLogger()), insecure: true, watchCache: { capacity: 3 } });
  await server.start();
  client = createClient(restConfig({ server: server.address, qps: 50, burst: 100 }), { agents: new AgentPool() });
  accounts = client.resource({ group: "", version: "v1", plural: "serviceaccounts", namespaced: true });
});

afterAll(async () => {
  client?.close();
  await server?.stop();
});

const account = (name: string, extra: Partial<ApiObject> = {}): ApiObject => ({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: "default" }, ...extra });

async function code(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => "no error",
    (e: unknown) => (isPlatformError(e) ? e.code : String(e)),
  );
  return err;
}

describe.skipIf(!present)("client against the embedded API server", () => {
  it("creates, reads, patches, updates and deletes, with typed errors for each refusal", async () => {
    const created = await accounts.create(account("robot"));
    expect(created.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(await code(accounts.create(account("robot")))).toBe("ALREADY_EXISTS");
    const patched = await accounts.patch("robot", "merge", { metadata: { labels: { team: "a" } } });
    expect(patched.metadata.labels).toEqual({ team: "a" });
    expect(await code(accounts.update({ ...created, metadata: { ...created.metadata, labels: { team: "b" } } }))).toBe("CONFLICT");
    const updated = await accounts.update({ ...patched, metadata: { ...patched.metadata, labels: { team: "c" } } });
    expect((await accounts.get("robot")).metadata.labels).toEqual(updated.metadata.labels);
    expect((await accounts.list({ namespace: "default", labelSelector: "team=c" })).items.map((i) => i.metadata.name)).toEqual(["robot"]);
    await accounts.delete("robot");
    expect(await code(accounts.get("robot"))).toBe("NOT_FOUND");
  });

  it("watches changes from a list's resourceVersion until aborted", async () => {
    const from = (await accounts.list({ namespace: "default" })).metadata.resourceVersion;
    const abort = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const e of accounts.watch({ namespace: "default", resourceVersion: from, signal: abort.signal })) {
        seen.push(`${e.type} ${(e.object as ApiObject).metadata.name}`);
        if (seen.length === 3) abort.abort();
      }
    })();
    await accounts.create(account("w1"));
    await accounts.patch("w1", "strategic", { metadata: { annotations: { a: "b" } } });
    await accounts.delete("w1");
    await watching;
    expect(seen).toEqual(["ADDED w1", "MODIFIED w1", "DELETED w1"]);
  });

  it("reports GONE for a watch from a compacted resourceVersion", async () => {
    const first = await accounts.create(account("old-1"));
    for (let i = 2; i <= 6; i++) await accounts.create(account(`old-${i}`));
    const err = await code(
      (async () => {
        for await (const _ of accounts.watch({ namespace: "default", resourceVersion: first.metadata.resourceVersion, timeoutSeconds: 5, signal: new AbortController().signal }));
      })(),
    );
    expect(err).toBe("GONE");
  });
});
