// The token cleaner on a fake store: an expired bootstrap token Secret deleted, one expiring later deleted when it
// expires, an unreadable expiration taken as expired (as upstream), and Secrets without an expiration or of another type kept.
import { afterEach, describe, expect, it } from "vitest";
import type { Secret } from "../../../src/api/types/core.js";
import { TokenCleaner } from "../../../src/controller/controllers/token-cleaner.js";
import { Informer } from "../../../src/controller/informer.js";
import { FakeStore } from "../fake-store.js";
import { until } from "../../fixtures/wait.js";

const TYPE = "bootstrap.platform.io/token";
const b64 = (s: string) => Buffer.from(s).toString("base64");

const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

describe("TokenCleaner", () => {
  it("deletes expired bootstrap tokens now, the others when they expire, and keeps what never expires", async () => {
    const secrets = new FakeStore<Secret>({ kind: "Secret" });
    const token = (name: string, data: Record<string, string>, type = TYPE) => secrets.put(secrets.make(name, { namespace: "platform-system", type, data }));
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
    token("bootstrap-token-aaaaaa", { expiration: b64(iso(Date.now() - 60_000)) });
    token("bootstrap-token-bbbbbb", { expiration: b64(iso(Date.now() + 1500)) });
    token("bootstrap-token-cccccc", { expiration: b64("next tuesday") });
    token("bootstrap-token-dddddd", { "token-id": b64("dddddd") });
    token("not-a-token", { expiration: b64(iso(Date.now() - 60_000)) }, "Opaque");
    const informer = new Informer<Secret>({ listWatcher: secrets.client(), name: "bootstrap-token-secrets", random: () => 0 });
    const writer = secrets.client();
    const cleaner = new TokenCleaner({ secrets: writer, tokens: informer, secretType: TYPE, stopTimeoutMs: 1000 });
    const signal = new AbortController();
    informer.start(signal.signal);
    await cleaner.start(signal.signal);
    running.push({ stop: async () => (await cleaner.stop(), await informer.stop(), signal.abort()) });
    await until(() => !secrets.objects.has("platform-system/bootstrap-token-aaaaaa") && !secrets.objects.has("platform-system/bootstrap-token-cccccc"), "the expired and unreadable ones deleted");
    expect(secrets.objects.has("platform-system/bootstrap-token-bbbbbb")).toBe(true);
    await until(() => !secrets.objects.has("platform-system/bootstrap-token-bbbbbb"), "the later one deleted once expired", 5000);
    expect([...secrets.objects.keys()].sort()).toEqual(["platform-system/bootstrap-token-dddddd", "platform-system/not-a-token"]);
    expect(writer.count("delete")).toBe(3);
  });
});
