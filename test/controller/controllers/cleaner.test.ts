// The cleaner: each age rule on a fake clock, as a pure decision and end to end against a real in-process API server.
import { Buffer } from "node:buffer";
import { beforeAll, describe, expect, it } from "vitest";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import { cleanupRule, CsrCleaner, DEFAULT_CLEANER_RULES, type CleanerRules } from "../../../src/controller/controllers/cleaner.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import { isPlatformError } from "../../../src/errors.js";
import { generateCa } from "../../../src/pki/ca.js";
import { parseCsr } from "../../../src/pki/csr.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import { csr as csrFixture, csrObject } from "../../fixtures/csr.js";
import { decide, nodeClientCsr, startHarness, stopAfterEach, type Harness } from "./harness.js";
import { until } from "../../fixtures/wait.js";

const HOUR = 3_600_000;
const T0 = Date.UTC(2030, 0, 1);
const at = (ms: number) => new Date(T0 + ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A CSR object as the cleaner reads it from the cache. */
function csrAt(o: { conditions?: [string, number][]; certificateNotAfterMs?: number } = {}): CertificateSigningRequest {
  const certificate = o.certificateNotAfterMs === undefined ? undefined : certificates.get(o.certificateNotAfterMs)!;
  return csrObject({
    name: "x",
    metadata: { uid: "u", creationTimestamp: at(0) },
    signerName: "platform.io/apiserver-client",
    spec: { request: "" },
    ...(certificate && { certificate }),
    conditions: (o.conditions ?? []).map(([type, ms]) => ({ type, status: "True" as const, lastUpdateTime: at(ms), lastTransitionTime: at(ms) })),
  });
}

/** Issued chains (base64 as in status.certificate) by NotAfter offset from T0. */
let certificates: Map<number, string>;
beforeAll(async () => {
  certificates = await issuedCertificates([2 * HOUR, 10 * HOUR]);
});

describe("cleanupRule", () => {
  it.each([
    ["a pending request younger than a day", {}, 24 * HOUR - 1, undefined],
    ["a pending request a day old", {}, 24 * HOUR, "pending"],
    ["an approved, unissued request younger than a day", { conditions: [["Approved", 0]] }, 23 * HOUR, undefined],
    ["an approved, unissued request a day old", { conditions: [["Approved", 0]] }, 24 * HOUR, "pending"],
    ["a denied request younger than an hour", { conditions: [["Denied", 1000]] }, HOUR, undefined],
    ["a denied request an hour after the denial", { conditions: [["Denied", 0]] }, HOUR, "denied"],
    ["a failed request an hour after the failure", { conditions: [["Approved", 0], ["Failed", 5 * 60_000]] }, HOUR + 5 * 60_000, "failed"],
    ["a failed request younger than an hour", { conditions: [["Approved", 0], ["Failed", 5 * 60_000]] }, HOUR, undefined],
    ["an issued request younger than an hour", { conditions: [["Approved", 0]], certificateNotAfterMs: 10 * HOUR }, HOUR - 1000, undefined],
    ["an issued request an hour after approval", { conditions: [["Approved", 0]], certificateNotAfterMs: 10 * HOUR }, HOUR, "approved"],
    ["a revoked request long after approval, its certificate still valid", { conditions: [["Approved", 0], ["Revoked", 60_000]], certificateNotAfterMs: 10 * HOUR }, 9 * HOUR, undefined],
    ["a revoked request once its certificate expired", { conditions: [["Approved", 0], ["Revoked", 60_000]], certificateNotAfterMs: 10 * HOUR }, 10 * HOUR, "expired"],
  ] as const)("decides on %s", (_name, shape, ageMs, rule) => {
    expect(cleanupRule(csrAt(shape as never), T0 + ageMs)).toBe(rule);
  });

  it.each([
    ["before its certificate expires", 2 * HOUR - 1000, undefined],
    ["once its certificate expired", 2 * HOUR, "expired"],
  ])("keeps an issued request with a long approval window %s", (_name, ageMs, rule) => {
    const rules: CleanerRules = { ...DEFAULT_CLEANER_RULES, approvedMs: 48 * HOUR };
    expect(cleanupRule(csrAt({ conditions: [["Approved", 0]], certificateNotAfterMs: 2 * HOUR }), T0 + ageMs, rules)).toBe(rule);
  });
});

/** Real certificates whose NotAfter is T0 + each given offset (issued at T0 by a throw-away CA). */
async function issuedCertificates(offsets: readonly number[]): Promise<Map<number, string>> {
  const ca = await generateCa({ commonName: "cleaner CA", keyType: "p256", lifetimeSeconds: 10 * 365 * 86_400, now: new Date(T0) });
  const [signer] = createBuiltinSigners({ ca: ca.ca }).filter((s) => s.signerName.endsWith("/apiserver-client"));
  const request = parseCsr((await csrFixture({ cn: "someone" })).pem);
  const out = new Map<number, string>();
  for (const ms of offsets) {
    const pem = await signer!.sign({ signerName: signer!.signerName, csr: request, usages: ["digital signature", "client auth"], expirationSeconds: ms / 1000 }, new Date(T0));
    out.set(ms, Buffer.from(pem).toString("base64"));
  }
  return out;
}

const track = stopAfterEach();

describe("CsrCleaner", () => {
  it("deletes each request once its rule's time has passed, and not before", async () => {
    const h = await startHarness();
    const metrics = new ControllerMetrics();
    const cleaner = new CsrCleaner({ csrs: h.api.csrs, informer: h.csrInformer, clock: h.clock, metrics, periodMs: 60_000 });
    const stop = new AbortController();
    track(h, stop);
    await h.admin.csrs.create(await nodeClientCsr(h.names, "pending"));
    await h.admin.csrs.create(await nodeClientCsr(h.names, "denied"));
    await decide(h, "denied-client", "Denied");
    await h.startInformers();
    await cleaner.start(stop.signal);
    const exists = async (name: string) =>
      h.admin.csrs.get(name).then(
        () => true,
        (err: unknown) => (isPlatformError(err, "NOT_FOUND") ? false : Promise.reject(err)),
      );
    // One minute short of the denial rule: both stay.
    await h.clock.advance(HOUR - 60_000);
    await h.clock.advance(30_000);
    expect([await exists("denied-client"), await exists("pending-client")]).toEqual([true, true]);
    await until(async () => {
      await h.clock.advance(60_000);
      return (await exists("denied-client")) ? undefined : true;
    }, "the denied request to go");
    expect(await exists("pending-client")).toBe(true);
    await until(async () => {
      await h.clock.advance(HOUR);
      return (await exists("pending-client")) ? undefined : true;
    }, "the pending request to go", 30);
    expect(h.clock.now() - T0).toBeGreaterThanOrEqual(24 * HOUR);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/platform_ca_csr_cleaned_total\{rule="denied"\} 1/);
    expect(text).toMatch(/platform_ca_csr_cleaned_total\{rule="pending"\} 1/);
  });
});
