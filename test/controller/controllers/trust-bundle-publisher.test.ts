// The trust-bundle publisher against a real in-process API server: create, recreate, correct, de-duplicate, rotate.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ClusterTrustBundle } from "../../../src/api/types/trust-bundle.js";
import { Informer } from "../../../src/controller/informer.js";
import { TrustBundlePublisher, trustBundleName } from "../../../src/controller/controllers/trust-bundle-publisher.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import { canonicalizeBundle } from "../../../src/pki/bundle.js";
import { CaSource } from "../../../src/pki/ca-source.js";
import { generateCa, type GeneratedCa } from "../../../src/pki/ca.js";
import { parseCsr } from "../../../src/pki/csr.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import { SignerRegistry } from "../../../signers/registry.js";
import { csr as csrFixture } from "../../fixtures/csr.js";
import { startHarness, stopAfterEach, type Harness } from "./harness.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { until } from "../../fixtures/wait.js";

interface World {
  readonly h: Harness;
  readonly source: CaSource;
  readonly signers: SignerRegistry;
  readonly metrics: ControllerMetrics;
  /** Writes a new CA pair into the files the source reads (rename, as a careful operator would). */
  rotate(ca: GeneratedCa): Promise<void>;
  /** Bundles of `signerName` as stored. */
  bundles(signerName: string): Promise<ClusterTrustBundle[]>;
}

const track = stopAfterEach();

const newCa = (h: Harness, commonName: string) => generateCa({ commonName, keyType: "p256", lifetimeSeconds: 10 * 365 * 86_400, now: new Date(h.clock.now()) });

async function world(first: (h: Harness) => Promise<GeneratedCa> = (h) => newCa(h, "publisher CA 1")): Promise<World> {
  const h = await startHarness();
  const dir = tempDir("publisher-ca-");
  const files = { certFile: join(dir, "ca.crt"), keyFile: join(dir, "ca.key") };
  const write = (ca: GeneratedCa): void => {
    writeFileSync(`${files.certFile}.new`, ca.certPem);
    writeFileSync(`${files.keyFile}.new`, ca.keyPem, { mode: 0o600 });
    renameSync(`${files.keyFile}.new`, files.keyFile);
    renameSync(`${files.certFile}.new`, files.certFile);
  };
  write(await first(h));
  const source = new CaSource({ ...files, clock: () => new Date(h.clock.now()) });
  await source.refresh();
  const signers = new SignerRegistry(createBuiltinSigners({ ca: source, groupSuffix: h.names.suffix, now: () => new Date(h.clock.now()) }));
  const informer = new Informer<ClusterTrustBundle>({ listWatcher: h.api.trustBundles, name: "bundles", clock: h.clock, random: () => 0 });
  const metrics = new ControllerMetrics();
  const publisher = new TrustBundlePublisher({ bundles: h.api.trustBundles, informer, signers, names: h.names, clock: h.clock, metrics, resyncMs: 60_000 });
  const stop = new AbortController();
  track(h, stop, () => informer.stop());
  informer.start(stop.signal);
  await publisher.start(stop.signal);
  return {
    h,
    source,
    signers,
    metrics,
    async rotate(ca) {
      write(ca);
      await source.refresh();
    },
    async bundles(signerName) {
      return (await h.admin.trustBundles.list()).items.filter((b) => b.spec.signerName === signerName);
    },
  };
}

/** Waits until the signer's only bundle holds exactly `pems`, advancing the publisher's clock a little each round. */
async function published(w: World, signerName: string, pems: readonly string[], stepMs = 0): Promise<ClusterTrustBundle> {
  const bundle = canonicalizeBundle(pems);
  return until(async () => {
    if (stepMs > 0) await w.h.clock.advance(stepMs);
    const mine = await w.bundles(signerName);
    return mine.length === 1 && mine[0]!.spec.trustBundle === bundle && mine[0]!.metadata.name === trustBundleName(signerName, bundle) ? mine[0] : undefined;
  }, `the bundle of ${signerName} to hold ${pems.length} anchor(s)`);
}

describe("TrustBundlePublisher", () => {
  it("publishes one bundle per signer, named after the signer and a hash of its anchors", async () => {
    let ca: GeneratedCa | undefined;
    const w = await world(async (h) => (ca = await newCa(h, "publisher CA 1")));
    for (const name of w.signers.names()) {
      const bundle = await published(w, name, [ca!.certPem]);
      expect(bundle.metadata.name).toMatch(new RegExp(`^${name.replace("/", ":").replaceAll(".", "\\.")}:[0-9a-f]{16}$`));
      expect(bundle.spec.signerName).toBe(name);
    }
    expect(await w.metrics.registry.metrics()).toMatch(/platform_ca_trust_bundle_syncs_total\{signer="platform\.io\/apiserver-client",result="created"\} 1/);
  });

  it("recreates a deleted bundle", async () => {
    const w = await world();
    const signer = w.h.names.signers.nodeagentClient;
    const first = await published(w, signer, w.signers.get(signer).trustAnchors());
    await w.h.admin.trustBundles.delete(first.metadata.name!);
    const again = await published(w, signer, w.signers.get(signer).trustAnchors());
    expect(again.metadata.name).toBe(first.metadata.name);
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
  });

  it("puts the anchors back into an edited bundle", async () => {
    const w = await world();
    const signer = w.h.names.signers.nodeagentServing;
    const first = await published(w, signer, w.signers.get(signer).trustAnchors());
    const intruder = await newCa(w.h, "someone else's CA");
    await w.h.admin.trustBundles.update({ ...first, spec: { ...first.spec, trustBundle: intruder.certPem } });
    const fixed = await published(w, signer, w.signers.get(signer).trustAnchors());
    expect(fixed.metadata.uid).toBe(first.metadata.uid);
  });

  it("removes other bundles of the signer and leaves other signers' bundles alone", async () => {
    const w = await world();
    const signer = w.h.names.signers.apiserverClient;
    await published(w, signer, w.signers.get(signer).trustAnchors());
    const other = await newCa(w.h, "stray CA");
    const meta = (name: string) => ({ apiVersion: `${w.h.names.certificates}/v1beta1`, kind: "ClusterTrustBundle", metadata: { name } });
    await w.h.admin.trustBundles.create({ ...meta("platform.io:apiserver-client:stray"), spec: { signerName: signer, trustBundle: other.certPem } });
    await w.h.admin.trustBundles.create({ ...meta("example.com:foreign:kept"), spec: { signerName: "example.com/foreign", trustBundle: other.certPem } });
    await published(w, signer, w.signers.get(signer).trustAnchors());
    expect((await w.bundles("example.com/foreign")).map((b) => b.metadata.name)).toEqual(["example.com:foreign:kept"]);
  });

  it("keeps a rotated-out CA published until the last certificate it issued expires, then drops it", async () => {
    let old: GeneratedCa | undefined;
    const w = await world(async (h) => (old = await newCa(h, "old CA")));
    const signer = w.h.names.signers.nodeagentClient;
    await published(w, signer, [old!.certPem]);
    // The old CA issues a one-hour certificate (NotAfter = now + 1 h); the signer records it in the CA source.
    const request = parseCsr((await csrFixture({ cn: "system:node:n1", o: ["system:nodes"] })).pem);
    await w.signers.get(signer).sign({ signerName: signer, csr: request, usages: ["digital signature", "client auth"], expirationSeconds: 3600 }, new Date(w.h.clock.now()));
    expect(w.source.history()).toEqual([]);
    const fresh = await newCa(w.h, "new CA");
    await w.rotate(fresh);
    expect(w.source.history().map((e) => e.ca.certPem)).toEqual([old!.ca.certPem]);
    await published(w, signer, [fresh.certPem, old!.certPem], 60_000);
    // A minute short of the old certificate's end both stay; past it, only the new CA is left.
    await w.h.clock.advance(3600_000 - 3 * 60_000);
    expect((await w.bundles(signer))[0]!.spec.trustBundle).toBe(canonicalizeBundle([fresh.certPem, old!.certPem]));
    await published(w, signer, [fresh.certPem], 60_000);
  });
});
