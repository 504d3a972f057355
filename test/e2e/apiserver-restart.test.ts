import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../apiserver/http-client.js";
import { ensureBuilt, startApiserver, type ApiserverProcess } from "./apiserver-process.js";
import { serviceAccount } from "../fixtures/objects.js";

const SA = "/api/v1/namespaces/default/serviceaccounts";
const WRITERS = 4;
const KILL_AFTER = 40;

describe("API server restart after SIGKILL", () => {
  let first: ApiserverProcess;
  let second: ApiserverProcess | undefined;
  const acknowledged = new Map<string, number>();

  beforeAll(async () => {
    ensureBuilt();
    first = await startApiserver();
    let n = 0;
    let killed = false;
    const writer = async (w: number) => {
      for (;;) {
        const name = `sa-${w}-${n++}`;
        let r;
        try {
          r = await call(first.address, "POST", SA, { body: serviceAccount({ name, labels: { round: "1" } }) });
        } catch {
          return; // the connection died with the process
        }
        if (r.status !== 201) return;
        acknowledged.set(name, Number(r.body.metadata.resourceVersion));
        if (!killed && acknowledged.size >= KILL_AFTER) {
          killed = true;
          first.child.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    await first.stop();
    second = await startApiserver({ dataDir: first.dataDir });
  }, 120_000);

  afterAll(async () => {
    await second?.stop();
  });

  it("keeps every acknowledged write", async () => {
    expect(acknowledged.size).toBeGreaterThanOrEqual(KILL_AFTER);
    const list = await call(second!.address, "GET", SA);
    const stored = new Map<string, number>(list.body.items.map((i: any) => [i.metadata.name, Number(i.metadata.resourceVersion)]));
    for (const [name, rv] of acknowledged) expect(stored.get(name), name).toBe(rv);
  });

  it("continues resourceVersions upward", async () => {
    const highest = Math.max(...acknowledged.values());
    const r = await call(second!.address, "POST", SA, { body: serviceAccount({ name: "after-restart" }) });
    expect(r.status).toBe(201);
    expect(Number(r.body.metadata.resourceVersion)).toBeGreaterThan(highest);
  });

  it("keeps the bootstrap namespaces without creating them twice", async () => {
    const ns = await call(second!.address, "GET", "/api/v1/namespaces");
    expect(ns.body.items.map((i: any) => i.metadata.name).sort()).toEqual(["default", "platform-system"]);
  });
});
