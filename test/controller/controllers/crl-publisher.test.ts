// The CRL publisher: a CRL per signer on its ClusterTrustBundle, verified and enforced by openssl, numbered upward.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ClusterTrustBundle } from "../../../src/api/types/trust-bundle.js";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import type { CertificateRevocation } from "../../../src/api/types/certificate-revocation.js";
import { CrlPublisher, crlAnnotations, type CrlStore } from "../../../src/controller/controllers/crl-publisher.js";
import { TrustBundlePublisher } from "../../../src/controller/controllers/trust-bundle-publisher.js";
import { Informer } from "../../../src/controller/informer.js";
import { generateCa } from "../../../src/pki/ca.js";
import { parseCsr } from "../../../src/pki/csr.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import { SignerRegistry } from "../../../signers/registry.js";
import { csr as csrFixture } from "../../fixtures/csr.js";
import { decide, startHarness, stopAfterEach, type Harness } from "./harness.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { until } from "../../fixtures/wait.js";

const track = stopAfterEach();
const dir = mkdtempSync(join(tmpdir(), "crl-publisher-"));
const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
const openssl = (...args: string[]) => spawnSync("openssl", args, { encoding: "utf8" });

async function setup() {
  const h = await startHarness();
  const { ca } = await generateCa({ commonName: "crl test CA", keyType: "p256", lifetimeSeconds: 30 * 86400, now: new Date(h.clock.now()) });
  const signers = new SignerRegistry(createBuiltinSigners({ ca, groupSuffix: h.names.suffix, now: () => new Date(h.clock.now()) }));
  const bundleInformer = new Informer<ClusterTrustBundle>({ listWatcher: h.api.trustBundles, name: "bundles", clock: h.clock, random: () => 0 });
  // As the controller user: its role reads CertificateRevocations.
  const revocationInformer = new Informer<CertificateRevocation>({ listWatcher: h.api.revocations, name: "revocations", clock: h.clock, random: () => 0 });
  const store: CrlStore = new Map();
  const common = { bundles: h.api.trustBundles, signers, names: h.names, clock: h.clock, resyncMs: 60_000 };
  const publisher = new TrustBundlePublisher({ ...common, informer: bundleInformer });
  const crlPublisher = () => new CrlPublisher({ ...common, bundleInformer, csrInformer: h.csrInformer, revocationInformer, store, validityMs: 3_600_000 });
  const stop = new AbortController();
  const stopCrls = new AbortController();
  track(h, stop, async () => void (await Promise.all([bundleInformer.stop(), revocationInformer.stop()])));
  await h.startInformers();
  bundleInformer.start(stop.signal);
  revocationInformer.start(stop.signal);
  await Promise.all([publisher.start(stop.signal), crlPublisher().start(AbortSignal.any([stop.signal, stopCrls.signal]))]);
  return { h, ca, signers, bundleInformer, store, stop, stopCrls, crlPublisher };
}

/** Creates, approves and issues (through the signer, as the signing controller would) a client certificate for `cn`. */
async function issued(h: Harness, signers: SignerRegistry, cn: string): Promise<string> {
  const created = await h.admin.csrs.create(await newCsrObject({ names: h.names, name: cn, cn, signerName: h.names.signers.apiserverClient, usages: ["digital signature", "client auth"] }));
  const approved = await decide(h, created.metadata.name!, "Approved");
  const request = Buffer.from(created.spec.request, "base64").toString();
  const chain = await signers.get(h.names.signers.apiserverClient).sign(
    { signerName: h.names.signers.apiserverClient, csr: parseCsr(request), usages: ["digital signature", "client auth"] },
    new Date(h.clock.now()),
  );
  await h.admin.csrs.update({ ...approved, status: { ...approved.status, certificate: Buffer.from(chain).toString("base64") } }, { subresource: "status" });
  return chain;
}

async function revoke(h: Harness, name: string, reason: string): Promise<void> {
  const current: CertificateSigningRequest = await h.admin.csrs.get(name);
  const conditions = [...(current.status?.conditions ?? []), { type: "Revoked", status: "True" as const, reason }];
  await h.admin.csrs.update({ ...current, status: { ...current.status, conditions } }, { subresource: "revocation" });
}

describe("CrlPublisher", () => {
  it("publishes a CRL on the signer's bundle that lists the revoked serial with its reason, openssl verifies and enforces", async () => {
    const { h, ca, signers, bundleInformer, store } = await setup();
    const a = crlAnnotations(h.names);
    const bundleOf = () => bundleInformer.list().find((b) => b.spec.signerName === h.names.signers.apiserverClient);
    const first = await until(() => bundleOf()?.metadata.annotations?.[a.number], "a first, empty CRL");
    expect(first).toBe("1");
    const alice = await issued(h, signers, "alice");
    const bob = await issued(h, signers, "bob");
    await revoke(h, "alice", "keyCompromise");
    const pem = await until(() => (bundleOf()?.metadata.annotations?.[a.number] === "2" ? bundleOf()!.metadata.annotations![a.crl] : undefined), "the CRL with alice");
    expect(store.get(h.names.signers.apiserverClient)?.pem).toBe(pem);

    const caFile = file("ca.pem", ca.certPem);
    const crlFile = file("crl.pem", pem!);
    const text = openssl("crl", "-in", crlFile, "-noout", "-text", "-verify", "-CAfile", caFile);
    expect(text.stderr).toContain("verify OK");
    const serial = spawnSync("openssl", ["x509", "-noout", "-serial"], { input: alice, encoding: "utf8" }).stdout.trim().replace("serial=", "");
    expect(text.stdout).toMatch(new RegExp(`Serial Number: ${serial}[\\s\\S]*?Key Compromise`));
    expect(text.stdout).toMatch(/Next Update: /);
    // The harness clock is in 2030: openssl checks the dates at that time.
    const at = String(Math.floor(h.clock.now() / 1000) + 60);
    const refused = openssl("verify", "-attime", at, "-crl_check", "-CRLfile", crlFile, "-CAfile", caFile, file("alice.pem", alice));
    expect(refused.status).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain("certificate revoked");
    // The node-agent client signer shares the CA: its CRL lists alice too (a CRL covers its issuer's certificates).
    const other = await until(() => {
      const b = bundleInformer.list().find((x) => x.spec.signerName === h.names.signers.nodeagentClient);
      const otherPem = b?.metadata.annotations?.[a.crl];
      return otherPem && openssl("crl", "-in", file("other.pem", otherPem), "-noout", "-text").stdout.includes(serial) ? otherPem : undefined;
    }, "alice in the other signer's CRL");
    expect(other).toContain("BEGIN X509 CRL");
    expect(openssl("verify", "-attime", at, "-crl_check", "-CRLfile", crlFile, "-CAfile", caFile, file("bob.pem", bob)).status).toBe(0);

    // Past half of its validity (1 h here) the CRL is rebuilt with the next number, before nextUpdate.
    h.clock.advance(31 * 60_000);
    expect(await until(() => (bundleOf()?.metadata.annotations?.[a.number] === "3" ? "3" : undefined), "a refreshed CRL")).toBe("3");
  });

  it("lists each CertificateRevocation's serial in the CRL of its signer's CA until the object is deleted", async () => {
    const { h, ca, bundleInformer } = await setup();
    const a = crlAnnotations(h.names);
    const crlOf = (signerName: string) => bundleInformer.list().find((b) => b.spec.signerName === signerName)?.metadata.annotations?.[a.crl];
    const textOf = (signerName: string) => openssl("crl", "-in", file("serial-crl.pem", crlOf(signerName) ?? ""), "-noout", "-text", "-verify", "-CAfile", file("serial-ca.pem", ca.certPem));
    await until(() => crlOf(h.names.signers.apiserverClient), "a first CRL");
    const signerName = h.names.signers.apiserverClient;
    // A serial with its high bit set: written with a leading zero byte so it stays positive, printed without it.
    const created = await h.admin.revocations.create({
      apiVersion: `${h.names.certificates}/v1`,
      kind: "CertificateRevocation",
      metadata: { name: `${signerName.replaceAll("/", ":")}:8a01ff` },
      spec: { signerName, serialNumber: "8A:01:FF", reason: "cessationOfOperation" },
    });
    const listed = await until(() => {
      const r = textOf(signerName);
      return r.stderr.includes("verify OK") && r.stdout.includes("Serial Number: 8A01FF") ? r.stdout : undefined;
    }, "the serial in the CRL");
    expect(listed).toMatch(/Serial Number: 8A01FF[\s\S]*?Cessation Of Operation/);
    // The node-agent client signer shares the CA, so its CRL lists the serial too.
    expect(await until(() => (textOf(h.names.signers.nodeagentClient).stdout.includes("8A01FF") ? "yes" : undefined), "the other signer's CRL")).toBe("yes");
    await h.admin.revocations.delete(created.metadata.name!);
    expect(await until(() => (textOf(signerName).stdout.includes("No Revoked Certificates") ? "gone" : undefined), "the serial gone")).toBe("gone");
  });

  it("continues the CRL number a previous publisher left on the bundle (a new leader, a restart)", async () => {
    const { h, signers, bundleInformer, stop, stopCrls, crlPublisher } = await setup();
    const a = crlAnnotations(h.names);
    const numberOf = () => bundleInformer.list().find((b) => b.spec.signerName === h.names.signers.apiserverClient)?.metadata.annotations?.[a.number];
    await until(() => numberOf(), "a first CRL");
    await issued(h, signers, "carol");
    await revoke(h, "carol", "superseded");
    await until(() => (numberOf() === "2" ? "2" : undefined), "the CRL with carol");
    stopCrls.abort();
    await issued(h, signers, "dave");
    await revoke(h, "dave", "affiliationChanged");
    await crlPublisher().start(stop.signal);
    expect(await until(() => (numberOf() === "3" ? "3" : undefined), "the next publisher's CRL")).toBe("3");
  });
});
