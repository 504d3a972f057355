// The CRL publisher: one CRL per signer that can sign one, listing its CA's revoked, unexpired certificates and the
// serials revoked by CertificateRevocation, rebuilt when a revocation arrives and before nextUpdate, published as
// annotations of the signer's ClusterTrustBundle.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import type { GroupNames } from "../../api/group.js";
import { REVOKED_CONDITION, revokedCondition, isRevocationReason } from "../../api/revocation.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import { normalizeSerialHex, type CertificateRevocation } from "../../api/types/certificate-revocation.js";
import type { ClusterTrustBundle } from "../../api/types/trust-bundle.js";
import type { ResourceClient } from "../../client/types.js";
import { invalidOption } from "../../errors.js";
import { buildCrl, type Crl, type CrlEntry } from "../../pki/crl.js";
import { decodePem } from "../../pki/pem.js";
import { revocationIdOf } from "../../pki/revocation-id.js";
import type { SignerRegistry } from "../../../signers/registry.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

export const CRL_PUBLISHER_CONTROLLER = "crl-publisher";

/** The annotations a signer's ClusterTrustBundle carries its CRL in (docs/revocation.md). */
export function crlAnnotations(names: GroupNames) {
  const g = names.certificates;
  return { crl: `${g}/crl`, number: `${g}/crl-number`, nextUpdate: `${g}/crl-next-update`, contents: `${g}/crl-contents` } as const;
}

/** The latest CRL of each signer this process built, for the ops endpoint's /crl/{signerName}. */
export type CrlStore = Map<string, Crl & { readonly number: number; readonly nextUpdate: Date }>;

export interface CrlPublisherOptions extends ControllerOptions {
  readonly bundles: ResourceClient<ClusterTrustBundle>;
  readonly bundleInformer: Informer<ClusterTrustBundle>;
  readonly csrInformer: Informer<CertificateSigningRequest>;
  /** CertificateRevocations (revocations by serial); without it, CRLs list revoked CSRs' certificates only. */
  readonly revocationInformer?: Informer<CertificateRevocation>;
  readonly signers: SignerRegistry;
  readonly names: GroupNames;
  /** nextUpdate − thisUpdate (default 24 h); a CRL is rebuilt once half of it has passed. */
  readonly validityMs?: number;
  /** How often every signer is looked at again (default 60 s). */
  readonly resyncMs?: number;
  readonly store?: CrlStore;
}

export class CrlPublisher extends Controller {
  private readonly o: CrlPublisherOptions;
  private readonly validityMs: number;
  private readonly resyncMs: number;
  private readonly annotations: ReturnType<typeof crlAnnotations>;
  /** Highest CRL number used per signer: numbers never go back even when a bundle object is replaced. */
  private readonly numbers = new Map<string, number>();

  constructor(options: CrlPublisherOptions) {
    super(CRL_PUBLISHER_CONTROLLER, [options.csrInformer, options.bundleInformer, ...(options.revocationInformer ? [options.revocationInformer] : [])], options);
    const validityMs = options.validityMs ?? 86_400_000;
    if (!(validityMs >= 60_000)) throw invalidOption("validityMs", "≥ 60000", options.validityMs);
    const resyncMs = options.resyncMs ?? 60_000;
    if (!(resyncMs > 0)) throw invalidOption("resyncMs", "> 0", options.resyncMs);
    this.o = options;
    this.validityMs = validityMs;
    this.resyncMs = resyncMs;
    this.annotations = crlAnnotations(options.names);
  }

  protected subscribe(): (() => void)[] {
    const signer = (name: string | undefined) => {
      if (name && this.o.signers.has(name)) this.queue.add(name);
    };
    // Signers may share a CA, and a CRL lists every revoked certificate of its CA: each signer looks again.
    const revocation = (csr: CertificateSigningRequest | undefined) => {
      if (csr?.status?.conditions?.some((c) => c.type === REVOKED_CONDITION)) for (const name of this.o.signers.names()) this.queue.add(name);
    };
    const everySigner = () => {
      for (const name of this.o.signers.names()) this.queue.add(name);
    };
    return [
      this.o.csrInformer.addHandlers({ onAdd: revocation, onUpdate: (old, csr) => (revocation(old), revocation(csr)), onDelete: revocation }),
      ...(this.o.revocationInformer ? [this.o.revocationInformer.addHandlers({ onAdd: everySigner, onUpdate: everySigner, onDelete: everySigner })] : []),
      this.o.bundleInformer.addHandlers({ onAdd: (b) => signer(b.spec?.signerName), onUpdate: (_old, b) => signer(b.spec?.signerName) }),
    ];
  }

  protected override onSynced(): void {
    this.repeat(this.resyncMs, () => {
      for (const name of this.o.signers.names()) this.queue.add(name);
    });
  }

  protected async sync(signerName: string, signal: AbortSignal): Promise<void> {
    if (!this.o.signers.has(signerName)) return;
    const issuer = this.o.signers.get(signerName).crlIssuer?.();
    const bundles = this.o.bundleInformer.list().filter((b) => b.spec?.signerName === signerName);
    // No CA, or no bundle published yet (its arrival queues the signer again).
    if (!issuer || bundles.length === 0) return;
    const now = new Date(this.clock.now());
    const entries = this.entries(issuer.subjectDer, now);
    const contents = createHash("sha256")
      .update(Buffer.from(issuer.subjectKeyId).toString("hex"))
      .update(entries.map((e) => `${Buffer.from(e.serial).toString("hex")}:${e.reason}:${e.revocationDate.toISOString()}`).join(","))
      .digest("hex")
      .slice(0, 16);
    const a = this.annotations;
    const current = (b: ClusterTrustBundle) => {
      const ann = b.metadata.annotations ?? {};
      return ann[a.contents] === contents && Date.parse(ann[a.nextUpdate] ?? "") - now.getTime() > this.validityMs / 2;
    };
    const stale = bundles.filter((b) => !current(b));
    if (stale.length === 0) {
      const published = Date.parse(bundles[0]!.metadata.annotations?.[a.nextUpdate] ?? "");
      this.metrics?.crlNextUpdate.set({ signer: signerName }, published / 1000);
      return;
    }
    const published = Math.max(0, ...bundles.map((b) => Number(b.metadata.annotations?.[a.number]) || 0));
    const number = Math.max(published, this.numbers.get(signerName) ?? 0) + 1;
    const nextUpdate = new Date(now.getTime() + this.validityMs);
    const crl = await buildCrl(issuer, { thisUpdate: now, nextUpdate, crlNumber: number, entries });
    this.numbers.set(signerName, number);
    this.o.store?.set(signerName, { ...crl, number, nextUpdate });
    const wanted = { [a.crl]: crl.pem, [a.number]: String(number), [a.nextUpdate]: nextUpdate.toISOString(), [a.contents]: contents };
    for (const b of stale) {
      // A conflict or a vanished bundle is retried by the controller core with backoff, reading the cache again.
      await this.o.bundles.update({ ...b, metadata: { ...b.metadata, annotations: { ...b.metadata.annotations, ...wanted } } }, { signal });
    }
    this.metrics?.crlNextUpdate.set({ signer: signerName }, nextUpdate.getTime() / 1000);
    this.log.info({ signerName, crlNumber: number, entries: entries.length, nextUpdate: nextUpdate.toISOString() }, "CRL published");
  }

  /**
   * The revoked certificates issued by this CA that have not expired, by serial: of every signer, as signers may
   * share a CA (the four built-ins do by default) and a CRL covers its issuer's whole scope (RFC 5280 §5).
   */
  private entries(issuerDer: Uint8Array, now: Date): CrlEntry[] {
    const out: { hex: string; entry: CrlEntry }[] = [];
    for (const csr of this.o.csrInformer.list()) {
      const condition = revokedCondition(csr);
      const certificate = csr.status?.certificate;
      if (!condition || !certificate || !isRevocationReason(condition.reason)) continue;
      try {
        const id = revocationIdOf(decodePem(Buffer.from(certificate, "base64").toString("latin1"), { label: "CERTIFICATE" })[0]!.der);
        // Certificates of a rotated-out CA belong in that CA's CRL; expired ones leave the list (RFC 5280 §3.3).
        if (Buffer.compare(Buffer.from(id.issuerDer), Buffer.from(issuerDer)) !== 0 || id.notAfter.getTime() < now.getTime()) continue;
        const revoked = Date.parse(condition.lastTransitionTime ?? "");
        out.push({ hex: id.serialHex, entry: { serial: id.serialContents, revocationDate: new Date(Number.isNaN(revoked) ? now.getTime() : revoked), reason: condition.reason } });
      } catch (err) {
        this.log.warn({ name: csr.metadata.name, err }, "revoked request's certificate cannot be read; left out of the CRL");
      }
    }
    const listed = new Set(out.map((x) => x.hex));
    for (const x of this.serialEntries(issuerDer, now)) if (!listed.has(x.hex)) (listed.add(x.hex), out.push(x));
    return out.sort((x, y) => (x.hex < y.hex ? -1 : x.hex > y.hex ? 1 : 0)).map((x) => x.entry);
  }

  /**
   * The serials revoked by CertificateRevocation for any signer with this CA (signers may share one), kept until the
   * object is deleted: its expiry is unknown, as the certificate was issued outside the API.
   */
  private serialEntries(issuerDer: Uint8Array, now: Date): { hex: string; entry: CrlEntry }[] {
    const out: { hex: string; entry: CrlEntry }[] = [];
    const sameCa = new Map<string, boolean>();
    const ofThisCa = (signerName: string): boolean => {
      if (!sameCa.has(signerName)) {
        const issuer = this.o.signers.has(signerName) ? this.o.signers.get(signerName).crlIssuer?.() : undefined;
        sameCa.set(signerName, issuer !== undefined && Buffer.compare(Buffer.from(issuer.subjectDer), Buffer.from(issuerDer)) === 0);
      }
      return sameCa.get(signerName)!;
    };
    for (const r of this.o.revocationInformer?.list() ?? []) {
      const hex = normalizeSerialHex(r.spec?.serialNumber ?? "");
      if (hex === undefined || !isRevocationReason(r.spec.reason) || !ofThisCa(r.spec.signerName)) continue;
      const value = Buffer.from(hex, "hex");
      // DER INTEGER contents: a leading 0x00 keeps a serial with its high bit set positive.
      const serial = value[0]! >= 0x80 ? Buffer.concat([Buffer.from([0]), value]) : value;
      const created = Date.parse(r.metadata.creationTimestamp ?? "");
      out.push({ hex: hex.toUpperCase(), entry: { serial, revocationDate: new Date(Number.isNaN(created) ? now.getTime() : created), reason: r.spec.reason } });
    }
    return out;
  }
}
