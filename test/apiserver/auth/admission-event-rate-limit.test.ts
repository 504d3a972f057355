// EventRateLimit alone, under a fake clock: several limits at once, the refusal that names them all, the Retry-After
// of the slowest bucket, and what the plugin leaves alone.
import { describe, expect, it } from "vitest";
import type { AdmissionAttributes } from "../../../src/apiserver/auth/admission.js";
import { eventRateLimitPlugin } from "../../../src/apiserver/auth/admission-event-rate-limit.js";
import { PlatformError } from "../../../src/errors.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { names, user } from "./fixtures.js";

/** The plugin reads only the group names of its context. */
const ctx = { names } as never;
const event = (ns = "default", who = "bob"): AdmissionAttributes => ({ operation: "CREATE", group: names.events, resource: "events", namespace: ns, user: user({ username: who }), dryRun: false });

async function outcome(plugin: ReturnType<typeof eventRateLimitPlugin>, a: AdmissionAttributes): Promise<PlatformError | "allowed"> {
  try {
    await plugin.admit(a, { apiVersion: `${names.events}/v1`, kind: "Event", metadata: { name: "e" } }, undefined, ctx);
    return "allowed";
  } catch (err) {
    return err as PlatformError;
  }
}

describe("EventRateLimit with several limits", () => {
  it("names every refusing limit, waits for the slowest bucket, and spends a token in every limit, as upstream", async () => {
    const clock = new FakeClock();
    const plugin = eventRateLimitPlugin({ limits: [{ type: "Namespace", qps: 1, burst: 1, cacheSize: 10 }, { type: "User", qps: 0.25, burst: 1, cacheSize: 10 }] }, clock);
    expect(await outcome(plugin, event("a", "alice"))).toBe("allowed");
    const both = await outcome(plugin, event("a", "alice"));
    expect(both).toMatchObject({ code: "TOO_MANY_REQUESTS", httpStatus: 429, reason: "TooManyRequests" });
    expect((both as PlatformError).message).toBe('[limit reached on type Namespace for key "a", limit reached on type User for key "alice"]');
    // The User bucket refills at one token in four seconds: that is the wait (a file gives whole-number qps, so 1 s at
    // most there; the plugin itself takes any positive rate).
    expect((both as PlatformError).details).toEqual({ retryAfterSeconds: 4 });
    // Namespace b has tokens, alice has none: refused by User alone, and b's token is spent all the same.
    expect((await outcome(plugin, event("b", "alice")) as PlatformError).message).toBe('limit reached on type User for key "alice"');
    expect((await outcome(plugin, event("b", "bob")) as PlatformError).message).toBe('limit reached on type Namespace for key "b"');
    // bob's token went with that refusal too: after 1 s namespace b has one again, bob not yet; after 4 s both.
    await clock.advance(1000);
    expect((await outcome(plugin, event("b", "bob")) as PlatformError).message).toBe('limit reached on type User for key "bob"');
    await clock.advance(4000);
    expect(await outcome(plugin, event("b", "bob"))).toBe("allowed");
  });

  it("leaves alone deletes, other resources, subresources and dry runs", async () => {
    const plugin = eventRateLimitPlugin({ limits: [{ type: "Server", qps: 1, burst: 1, cacheSize: 4096 }] }, new FakeClock());
    expect(await outcome(plugin, event())).toBe("allowed");
    for (const a of [
      { ...event(), operation: "DELETE" as const },
      { ...event(), resource: "pods", group: "" },
      { ...event(), group: "example.com" },
      { ...event(), subresource: "status" },
      { ...event(), dryRun: true },
    ]) expect(await outcome(plugin, a)).toBe("allowed");
    expect(await outcome(plugin, { ...event(), operation: "UPDATE", group: "" })).toBeInstanceOf(PlatformError);
  });
});
