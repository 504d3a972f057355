// A ControllerSet's Events yield to its controllers' backlog: one Event write at a time while keys wait in a work
// queue, all writers once the queues are empty.
import { afterEach, describe, expect, it } from "vitest";
import { isIssued } from "../../../src/api/conditions.js";
import type { Event } from "../../../src/api/types/event.js";
import type { ResourceClient } from "../../../src/client/types.js";
import { ControllerSet, controllerResources } from "../../../src/controller/controllers/controller-set.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import { silentLogger } from "../../../src/logger.js";
import { generateCa } from "../../../src/pki/ca.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import { SignerRegistry } from "../../../signers/registry.js";
import { nodeClientCsr, startHarness, type Harness } from "./harness.js";
import { until } from "../../fixtures/wait.js";

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** The Event client of `h`, with each create held until `open` and every start noted with the backlog at that moment. */
function watchedEvents(h: Harness, backlog: () => number) {
  const starts: Array<{ inFlight: number; backlog: number }> = [];
  let inFlight = 0;
  const inner = h.api.events;
  const client: ResourceClient<Event> = {
    list: (params) => inner.list(params),
    watch: (params) => inner.watch(params),
    get: (name, options) => inner.get(name, options),
    update: (obj, params) => inner.update(obj, params),
    patch: (name, type, patch, params) => inner.patch(name, type, patch, params),
    delete: (name, options) => inner.delete(name, options),
    create: async (obj, params) => {
      inFlight++;
      starts.push({ inFlight, backlog: backlog() });
      try {
        // Long enough for the other writers to start, were they allowed to.
        await new Promise((resolve) => setTimeout(resolve, 20));
        return await inner.create(obj, params);
      } finally {
        inFlight--;
      }
    },
  };
  return { client, starts };
}

describe("ControllerSet", () => {
  it("writes one Event at a time while a controller has keys waiting, and up to four once the backlog is gone", async () => {
    const h = await startHarness();
    cleanup.push(() => h.stop());
    const ca = await generateCa({ commonName: "set test CA", keyType: "p256", lifetimeSeconds: 10 * 365 * 86_400, now: new Date(h.clock.now()) });
    let set: ControllerSet | undefined;
    const events = watchedEvents(h, () => set!.controllers.reduce((n, c) => n + c.backlog(), 0));
    set = new ControllerSet({
      resources: { ...h.api, events: events.client },
      names: h.names,
      signers: new SignerRegistry(createBuiltinSigners({ ca: ca.ca, groupSuffix: h.names.suffix, now: () => new Date(h.clock.now()) })),
      enabled: new Set(["csrapproving", "csrsigning"] as const),
      identity: "set-test",
      clock: h.clock,
      logger: silentLogger(),
      metrics: new ControllerMetrics(),
      // One worker each, so 30 requests leave keys waiting in the queues.
      csrWorkers: 1,
      minResyncPeriodMs: 12 * 3600_000,
      stopTimeoutMs: 5_000,
      autoApproveClient: true,
      cleaner: { periodMs: 3600_000, rules: { pendingMs: 86_400_000, approvedMs: 3600_000, deniedMs: 3600_000, failedMs: 3600_000, issuedGraceMs: 0 } },
      publisherResyncMs: 60_000,
    });
    const stop = new AbortController();
    cleanup.push(async () => {
      stop.abort();
      await set!.stop();
    });
    await set.start(stop.signal);
    const bootstrap = controllerResources(h.client("bootstrapper"), h.names);
    const names = Array.from({ length: 30 }, (_, i) => `set-${i}`);
    await Promise.all(names.map(async (n) => bootstrap.csrs.create(await nodeClientCsr(h.names, n))));
    await until(async () => ((await h.admin.csrs.list()).items.filter(isIssued).length === names.length ? true : undefined), "every CSR to be issued");
    // Two Events per CSR (approved, issued); wait for the queue to drain.
    await until(() => (events.starts.length >= 2 * names.length ? true : undefined), "every Event to be written");
    const whileBacklogged = events.starts.filter((s) => s.backlog > 0);
    expect(whileBacklogged.length).toBeGreaterThan(0);
    expect(Math.max(...whileBacklogged.map((s) => s.inFlight))).toBe(1);
    // With the queues empty the recorder goes back to its four writers.
    expect(Math.max(...events.starts.filter((s) => s.backlog === 0).map((s) => s.inFlight))).toBeGreaterThan(1);
  });
});

describe("controller names", () => {
  it("are the ones the configuration knows: no controller the loader would warn about, none it names that does not run", async () => {
    const { CONTROLLER_NAMES } = await import("../../../src/controller/controllers/controller-set.js");
    const { KNOWN_CONTROLLERS } = await import("../../../src/config/controller-manager.js");
    expect([...CONTROLLER_NAMES].sort()).toEqual([...KNOWN_CONTROLLERS].sort());
  });
});
