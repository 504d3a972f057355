// The signing controller against a real in-process API server: issue, refuse, retry, never twice.
import { Buffer } from "node:buffer";
import { X509Certificate, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { findCondition, isIssued } from "../../../src/api/conditions.js";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import { SigningController } from "../../../src/controller/controllers/signing.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import { generateCa, type GeneratedCa } from "../../../src/pki/ca.js";
import { SigningPool } from "../../../src/pki/signing-pool.js";
import type { CaKeyPair } from "../../../src/pki/types.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import { SignerRegistry } from "../../../signers/registry.js";
import type { RequestBytes, Signer, SignOptions, SigningRequest } from "../../../signers/signer.js";
import { CsrParser } from "../../../src/controller/controllers/csr-object.js";
import { PlatformError } from "../../../src/errors.js";
import { decide, eventsFor, nodeClientCsr, startHarness, stopAfterEach, type Harness } from "./harness.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { until } from "../../fixtures/wait.js";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { startTracing, type Tracer } from "../../../src/tracing/tracer.js";

interface World {
  readonly h: Harness;
  readonly ca: GeneratedCa;
  readonly metrics: ControllerMetrics;
  /** Calls of sign() on every signer, by CSR common name. */
  readonly signed: string[];
  get(name: string): Promise<CertificateSigningRequest>;
  create(csr: CertificateSigningRequest): Promise<CertificateSigningRequest>;
}

const track = stopAfterEach();

/** Wraps a signer: counts sign() calls (and the sizes of signBytes() batches) and lets a test run something in the middle of one. */
function watched(signer: Signer, signed: string[], during?: (request: SigningRequest) => Promise<void>): Signer {
  return {
    signerName: signer.signerName,
    validate: (r) => signer.validate(r),
    trustAnchors: () => signer.trustAnchors(),
    ready: () => signer.ready(),
    async sign(r, now, options) {
      signed.push(r.csr.subject.commonName ?? "");
      const pem = await signer.sign(r, now, options);
      await during?.(r);
      return pem;
    },
    ...(signer.signUnchecked && {
      async signUnchecked(r: SigningRequest, now: Date, options?: SignOptions) {
        signed.push(`unchecked ${r.csr.subject.commonName ?? ""}`);
        const pem = await signer.signUnchecked!(r, now, options);
        await during?.(r);
        return pem;
      },
    }),
    ...(signer.signBytes && {
      signBytes(requests: readonly RequestBytes[], now: Date, options?: SignOptions) {
        signed.push(`bytes ${requests.length}`);
        return signer.signBytes!(requests, now, options);
      },
    }),
  };
}

/** Reads every request as not checked in this process, as beside an API server of another process. */
class UncheckedReads extends CsrParser {
  override uncheckedRequest(csr: CertificateSigningRequest) {
    return { ...super.uncheckedRequest(csr), checked: false };
  }
}

/** A parser that finds no request checked before in this process (the API server here verifies them at create). */
class NothingCheckedHere extends CsrParser {
  protected override checkedBefore(): boolean {
    return false;
  }
}

interface WorldOptions {
  readonly provider?: { current(): CaKeyPair | undefined };
  readonly during?: (request: SigningRequest, w: World) => Promise<void>;
  readonly pool?: SigningPool;
  /** Runs before the controller starts (to leave it a backlog). */
  readonly before?: (w: World) => Promise<void>;
  readonly tracer?: Tracer;
  readonly parser?: CsrParser;
  /** Signers in place of the built-in ones (still watched). */
  readonly signers?: (builtins: readonly Signer[]) => readonly Signer[];
}

async function world(o: WorldOptions = {}): Promise<World> {
  const h = await startHarness();
  const ca = await generateCa({ commonName: "signing test CA", keyType: "p256", lifetimeSeconds: 10 * 365 * 86_400, now: new Date(h.clock.now()) });
  const signed: string[] = [];
  const metrics = new ControllerMetrics();
  const w: World = {
    h,
    ca,
    metrics,
    signed,
    get: (name) => h.admin.csrs.get(name),
    create: (csr) => h.admin.csrs.create(csr),
  };
  const builtins = createBuiltinSigners({ ca: o.provider ?? ca.ca, groupSuffix: h.names.suffix, now: () => new Date(h.clock.now()) });
  const signers = new SignerRegistry((o.signers?.(builtins) ?? builtins).map((s) => watched(s, signed, o.during && ((r) => o.during!(r, w)))));
  const controller = new SigningController({ csrs: h.api.csrs, informer: h.csrInformer, signers, events: h.events, clock: h.clock, metrics, workers: 2, ...(o.tracer && { tracer: o.tracer }), ...(o.pool && { pool: o.pool }), ...(o.parser && { parser: o.parser }) });
  const stop = new AbortController();
  track(h, stop, o.pool && (() => o.pool!.close()));
  await o.before?.(w);
  await h.startInformers();
  await controller.start(stop.signal);
  return w;
}

/** The same request with one bit of its signature flipped. */
function tamper(der: Uint8Array): Uint8Array {
  const copy = Uint8Array.from(der);
  copy[copy.length - 5]! ^= 0x01;
  return copy;
}

const issued = (w: World, name: string) => until(async () => ((c) => (isIssued(c) ? c : undefined))(await w.get(name)), `${name} to be issued`);
const failed = (w: World, name: string) => until(async () => ((c) => (findCondition(c, "Failed") ? c : undefined))(await w.get(name)), `${name} to fail`);
const leafOf = (csr: CertificateSigningRequest) => new X509Certificate(Buffer.from(csr.status!.certificate!, "base64").toString("latin1"));

/** Twelve approved requests waiting before the controller starts (a backlog), each issued by the CA. */
async function issuedBacklog(prefix: string, o: WorldOptions): Promise<{ w: World; caKey: KeyObject }> {
  const nodes = Array.from({ length: 12 }, (_, i) => `${prefix}-${i}`);
  const w = await world({
    ...o,
    before: async (v) => {
      await o.before?.(v);
      for (const node of nodes) {
        await v.create(await nodeClientCsr(v.h.names, node));
        await decide(v.h, `${node}-client`, "Approved");
      }
    },
  });
  const caKey = new X509Certificate(w.ca.certPem).publicKey;
  for (const node of nodes) expect(leafOf(await issued(w, `${node}-client`)).verify(caKey)).toBe(true);
  return { w, caKey };
}

describe("SigningController", () => {
  it("issues an approved request, records an event and counts it", async () => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-1", { expirationSeconds: 3600 }));
    await decide(w.h, "node-1-client", "Approved");
    const csr = await issued(w, "node-1-client");
    const leaf = leafOf(csr);
    expect(leaf.verify(new X509Certificate(w.ca.certPem).publicKey)).toBe(true);
    expect(leaf.subject).toContain("CN=system:node:node-1");
    // 5 minutes backdated, one hour asked for.
    expect((Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 1000).toBe(3600 + 300);
    const events = await eventsFor(w.h, csr);
    expect(events.map((e) => [e.type, e.reason, e.action])).toEqual([["Normal", "CertificateIssued", "Sign"]]);
    const text = await w.metrics.registry.metrics();
    expect(text).toMatch(/platform_ca_csr_signed_total\{signer="platform\.io\/apiserver-client-nodeagent"\} 1/);
    expect(text).toMatch(/platform_ca_csr_requested_duration_seconds_sum\{signer="platform\.io\/apiserver-client-nodeagent"\} 3600/);
    expect(text).toMatch(/platform_ca_csr_honoured_duration_seconds_sum\{signer="platform\.io\/apiserver-client-nodeagent"\} 3900/);
  });

  it("traces each sync, and the signing inside it, when given a tracer", async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = await startTracing({ endpoint: "localhost:4317", samplingRatePerMillion: 1_000_000 }, { serviceName: "platform-ca-controller-manager", exporter });
    const w = await world({ tracer });
    await w.create(await nodeClientCsr(w.h.names, "node-t", { expirationSeconds: 3600 }));
    await decide(w.h, "node-t-client", "Approved");
    await issued(w, "node-t-client");
    const spans = exporter.getFinishedSpans();
    const sign = spans.find((s) => s.name === "sign")!;
    expect(sign.attributes).toEqual({ signerName: w.h.names.signers.nodeagentClient });
    const sync = spans.find((s) => s.spanContext().spanId === sign.parentSpanContext?.spanId)!;
    expect(sync.name).toBe("csrsigning sync");
    expect(sync.attributes).toEqual({ key: "node-t-client" });
    await tracer.shutdown();
  });

  it.each([
    ["a denied request", "Denied" as const],
    ["a request nobody approved", undefined],
  ])("never issues %s", async (_name, decision) => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-2"));
    if (decision) await decide(w.h, "node-2-client", decision);
    // A later request goes through, so the controller had every chance to act on the first one.
    await w.create(await nodeClientCsr(w.h.names, "node-3"));
    await decide(w.h, "node-3-client", "Approved");
    await issued(w, "node-3-client");
    const untouched = await w.get("node-2-client");
    expect(untouched.status?.certificate).toBeUndefined();
    expect(findCondition(untouched, "Failed")).toBeUndefined();
    expect(w.signed).toEqual(["system:node:node-3"]);
  });

  it.each([
    ["an organization other than system:nodes", { o: ["developers"] }, /needs organization exactly \["system:nodes"\]/],
    ["a DNS name on a client certificate", { dns: ["node-4.example"] }, /does not allow DNS subject alternative names/],
    ["a server usage", { usages: ["digital signature", "server auth"] }, /usage "server auth" is not allowed/],
  ])("marks a request with %s Failed with the signer's reason and a warning", async (_name, options, reason) => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-4", options));
    await decide(w.h, "node-4-client", "Approved");
    const csr = await failed(w, "node-4-client");
    const condition = findCondition(csr, "Failed")!;
    expect(condition).toMatchObject({ status: "True", reason: "SignerValidationFailure" });
    expect(condition.message).toMatch(reason);
    expect(csr.status?.certificate).toBeUndefined();
    const events = await eventsFor(w.h, csr);
    expect(events.map((e) => [e.type, e.reason])).toEqual([["Warning", "SignerValidationFailure"]]);
    expect(events[0]!.note).toMatch(reason);
    expect(w.signed).toEqual([]);
  });

  it("signs a backlog on the pool's workers and a lone request on its own thread", async () => {
    // Workers for any backlog: the burst of this test is too small to be worth starting them by default.
    const pool = new SigningPool({ workers: 2, startCostMs: 0 });
    const { w, caKey } = await issuedBacklog("burst", { pool });
    expect(pool.counts.workers).toBeGreaterThan(0);
    expect(pool.started()).toBe(true);
    const before = pool.counts.inline;
    await w.create(await nodeClientCsr(w.h.names, "alone"));
    await decide(w.h, "alone-client", "Approved");
    expect(leafOf(await issued(w, "alone-client")).verify(caKey)).toBe(true);
    expect(pool.counts.inline).toBe(before + 1);
  });

  it("leaves the signature checks of a backlog nobody here checked to the pool's workers, which issue it", async () => {
    const pool = new SigningPool({ workers: 2, startCostMs: 0 });
    const { w } = await issuedBacklog("unchecked", { pool, parser: new UncheckedReads() });
    expect(w.signed.filter((s) => s.startsWith("unchecked ")).length).toBe(12);
    expect(pool.counts.workers).toBeGreaterThan(0);
  });

  it("hands a backlog nobody here checked to the signer as bytes, in batches larger than one sync's: judged, checked and signed on the pool's workers", async () => {
    const pool = new SigningPool({ workers: 2, startCostMs: 0 });
    const refusedDns = "refused.example";
    const { w } = await issuedBacklog("bytes", {
      pool,
      parser: new NothingCheckedHere(),
      before: async (v) => {
        await v.create(await nodeClientCsr(v.h.names, "refused", { dns: [refusedDns] }));
        await decide(v.h, "refused-client", "Approved");
      },
    });
    const batches = w.signed.map((s) => /^bytes (\d+)$/.exec(s)?.[1]).map(Number);
    // The two syncs took the waiting requests into their batches: fewer signBytes calls than requests.
    expect(batches.reduce((a, b) => a + b, 0)).toBe(13);
    expect(Math.max(...batches)).toBeGreaterThan(2);
    expect(pool.counts.workers).toBeGreaterThan(0);
    const refused = await failed(w, "refused-client");
    expect(findCondition(refused, "Failed")).toMatchObject({
      reason: "SignerValidationFailure",
      message: `signer ${w.h.names.signers.nodeagentClient} does not allow DNS subject alternative names, got ${refusedDns}`,
    });
    // The Event names the window the worker issued: the same as the certificate's.
    const csr = await w.get("bytes-0-client");
    const events = await eventsFor(w.h, csr);
    expect(events.map((e) => e.note)).toEqual([`certificate issued by ${w.h.names.signers.nodeagentClient}, valid until ${new Date(leafOf(csr).validTo).toISOString()}`]);
  });

  it("marks a request whose signature a pool worker finds broken Failed as unreadable, and issues the rest of its batch", async () => {
    const pool = new SigningPool({ workers: 2, startCostMs: 0 });
    const { w } = await issuedBacklog("worker-check", {
      pool,
      parser: new NothingCheckedHere(),
      before: async (v) => {
        await v.create(await nodeClientCsr(v.h.names, "tampered"));
        await decide(v.h, "tampered-client", "Approved");
      },
      // The API server refuses a broken signature at create: this one breaks on its way to the signer.
      signers: (builtins) =>
        builtins.map((s) => ({
          signerName: s.signerName,
          validate: (r: SigningRequest) => s.validate(r),
          sign: (r: SigningRequest, now: Date, options?: SignOptions) => s.sign(r, now, options),
          trustAnchors: () => s.trustAnchors(),
          ready: () => s.ready(),
          signBytes: (requests: readonly RequestBytes[], now: Date, options?: SignOptions) =>
            s.signBytes!(requests.map((r) => (Buffer.from(r.der).includes("system:node:tampered") ? { ...r, der: tamper(r.der) } : r)), now, options),
        })),
    });
    const csr = await failed(w, "tampered-client");
    expect(findCondition(csr, "Failed")).toMatchObject({ reason: "SignerValidationFailure", message: "the request cannot be read: CSR signature does not verify with the request's own public key" });
    expect(pool.counts.workers).toBeGreaterThan(0);
  });

  it("marks a request whose bytes the signer finds unreadable while signing Failed, as a checked read would", async () => {
    const w = await world({
      // Requests go unchecked only to a controller with a pool (without one the check would run here anyway).
      pool: new SigningPool({ workers: 2, startCostMs: 0 }),
      parser: new UncheckedReads(),
      signers: (builtins) =>
        builtins.map((s) => ({
          signerName: s.signerName,
          validate: (r: SigningRequest) => s.validate(r),
          trustAnchors: () => s.trustAnchors(),
          ready: () => s.ready(),
          sign: (r: SigningRequest, now: Date, options?: SignOptions) => s.sign(r, now, options),
          signUnchecked: async () => {
            throw new PlatformError("CSR_SIGNATURE", "CSR signature does not verify with the request's own public key");
          },
        })),
    });
    await w.create(await nodeClientCsr(w.h.names, "node-u"));
    await decide(w.h, "node-u-client", "Approved");
    const csr = await failed(w, "node-u-client");
    expect(findCondition(csr, "Failed")).toMatchObject({ reason: "SignerValidationFailure", message: "the request cannot be read: CSR signature does not verify with the request's own public key" });
    expect(csr.status?.certificate).toBeUndefined();
  });

  it("retries with backoff while the signer has no CA, without marking the request Failed", async () => {
    let loaded: CaKeyPair | undefined;
    const w = await world({ provider: { current: () => loaded } });
    await w.create(await nodeClientCsr(w.h.names, "node-5"));
    await decide(w.h, "node-5-client", "Approved");
    await until(() => (w.signed.length >= 1 ? true : undefined), "a first attempt");
    await w.h.clock.advance(50);
    expect(w.signed.length).toBeGreaterThan(1);
    const waiting = await w.get("node-5-client");
    expect(findCondition(waiting, "Failed")).toBeUndefined();
    expect(waiting.status?.certificate).toBeUndefined();
    loaded = w.ca.ca;
    const csr = await until(async () => {
      await w.h.clock.advance(1000);
      const c = await w.get("node-5-client");
      return isIssued(c) ? c : undefined;
    }, "issuance once the CA is there");
    expect(leafOf(csr).verify(new X509Certificate(w.ca.certPem).publicKey)).toBe(true);
  });

  it("writes nothing for a request that is already issued", async () => {
    const w = await world();
    await w.create(await nodeClientCsr(w.h.names, "node-6"));
    await decide(w.h, "node-6-client", "Approved");
    const first = await issued(w, "node-6-client");
    // A change that re-delivers the object to the controller.
    const patched = await w.h.admin.csrs.patch("node-6-client", "merge", { metadata: { labels: { touched: "yes" } } });
    await until(() => (w.h.csrInformer.get("node-6-client")?.metadata.labels?.touched ? true : undefined), "the cache to see the label");
    await w.h.clock.advance(1000);
    const after = await w.get("node-6-client");
    expect(after.status?.certificate).toBe(first.status?.certificate);
    expect(after.metadata.resourceVersion).toBe(patched.metadata.resourceVersion);
    expect(w.signed).toEqual(["system:node:node-6"]);
  });

  it("re-reads on a conflict and writes the certificate it already has", async () => {
    let touched = false;
    const w = await world({
      during: async (_r, self) => {
        if (touched) return;
        touched = true;
        await self.h.admin.csrs.patch("node-7-client", "merge", { metadata: { labels: { racing: "writer" } } });
      },
    });
    await w.create(await nodeClientCsr(w.h.names, "node-7"));
    await decide(w.h, "node-7-client", "Approved");
    const csr = await issued(w, "node-7-client");
    expect(csr.metadata.labels).toEqual({ racing: "writer" });
    expect(w.signed).toEqual(["system:node:node-7"]);
  });

  it("stops after a conflict when another writer issued the request meanwhile", async () => {
    let other = "";
    const w = await world({
      during: async (r, self) => {
        if (other) return;
        const current = await self.h.admin.csrs.get("node-8-client");
        other = Buffer.from(await createBuiltinSigners({ ca: self.ca.ca, groupSuffix: self.h.names.suffix })[1]!.sign(r, new Date(self.h.clock.now()))).toString("base64");
        await self.h.admin.csrs.update({ ...current, status: { ...current.status, certificate: other } }, { subresource: "status" });
      },
    });
    await w.create(await nodeClientCsr(w.h.names, "node-8"));
    await decide(w.h, "node-8-client", "Approved");
    const csr = await issued(w, "node-8-client");
    await w.h.clock.advance(1000);
    expect((await w.get("node-8-client")).status?.certificate).toBe(other);
    expect(csr.status?.certificate).toBe(other);
    expect((await eventsFor(w.h, csr)).filter((e) => e.reason === "CertificateIssued")).toEqual([]);
  });

  it("ignores requests for signers it does not have", async () => {
    const w = await world();
    await w.create(await newCsrObject({ names: w.h.names, name: "custom", cn: "x", signerName: "example.com/custom" }));
    await decide(w.h, "custom", "Approved");
    await w.create(await nodeClientCsr(w.h.names, "node-9"));
    await decide(w.h, "node-9-client", "Approved");
    await issued(w, "node-9-client");
    const custom = await w.get("custom");
    expect(custom.status?.certificate).toBeUndefined();
    expect(findCondition(custom, "Failed")).toBeUndefined();
  });
});
