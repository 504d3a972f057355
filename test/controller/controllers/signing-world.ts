// The signing controller's test world: a real in-process API server, the built-in signers watched, a controller over them.
import { Buffer } from "node:buffer";
import { X509Certificate, type KeyObject } from "node:crypto";
import { expect } from "vitest";
import { findCondition, isIssued } from "../../../src/api/conditions.js";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import { SigningController } from "../../../src/controller/controllers/signing.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import { generateCa, type GeneratedCa } from "../../../src/pki/ca.js";
import type { SigningPool } from "../../../src/pki/signing-pool.js";
import type { CaKeyPair } from "../../../src/pki/types.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import { SignerRegistry } from "../../../signers/registry.js";
import type { RequestBytes, Signer, SignOptions, SigningRequest } from "../../../signers/signer.js";
import { decide, nodeClientCsr, startHarness, stopAfterEach, type Harness } from "./harness.js";
import { until } from "../../fixtures/wait.js";
import type { Tracer } from "../../../src/tracing/tracer.js";

export interface World {
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
export function watched(signer: Signer, signed: string[], during?: (request: SigningRequest) => Promise<void>): Signer {
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
    ...(signer.signBytes && {
      signBytes(requests: readonly RequestBytes[], now: Date, options?: SignOptions) {
        signed.push(`bytes ${requests.length}`);
        return signer.signBytes!(requests, now, options);
      },
    }),
  };
}

export interface WorldOptions {
  readonly provider?: { current(): CaKeyPair | undefined };
  readonly during?: (request: SigningRequest, w: World) => Promise<void>;
  readonly pool?: SigningPool;
  /** Runs before the controller starts (to leave it a backlog). */
  readonly before?: (w: World) => Promise<void>;
  readonly tracer?: Tracer;
  /** Signers in place of the built-in ones (still watched). */
  readonly signers?: (builtins: readonly Signer[]) => readonly Signer[];
}

export async function world(o: WorldOptions = {}): Promise<World> {
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
  const controller = new SigningController({ csrs: h.api.csrs, informer: h.csrInformer, signers, events: h.events, clock: h.clock, metrics, workers: 2, ...(o.tracer && { tracer: o.tracer }), ...(o.pool && { pool: o.pool }) });
  const stop = new AbortController();
  track(h, stop, o.pool && (() => o.pool!.close()));
  await o.before?.(w);
  await h.startInformers();
  await controller.start(stop.signal);
  return w;
}

export const issued = (w: World, name: string) => until(async () => ((c) => (isIssued(c) ? c : undefined))(await w.get(name)), `${name} to be issued`);
export const failed = (w: World, name: string) => until(async () => ((c) => (findCondition(c, "Failed") ? c : undefined))(await w.get(name)), `${name} to fail`);
export const leafOf = (csr: CertificateSigningRequest) => new X509Certificate(Buffer.from(csr.status!.certificate!, "base64").toString("latin1"));

/** Twelve approved requests waiting before the controller starts (a backlog), each issued by the CA. */
export async function issuedBacklog(prefix: string, o: WorldOptions): Promise<{ w: World; caKey: KeyObject }> {
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
