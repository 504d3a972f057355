// The trust-bundle publisher: one ClusterTrustBundle per signer holding its anchors, recreated, corrected and de-duplicated.
import { createHash } from "node:crypto";
import type { GroupNames } from "../../api/group.js";
import {
  CLUSTER_TRUST_BUNDLE_KIND,
  CLUSTER_TRUST_BUNDLE_VERSION,
  trustBundleNamePrefix,
  type ClusterTrustBundle,
} from "../../api/types/trust-bundle.js";
import type { ResourceClient } from "../../client/types.js";
import { invalidOption, isPlatformError, PlatformError } from "../../errors.js";
import { canonicalizeBundle } from "../../pki/bundle.js";
import type { SignerRegistry } from "../../../signers/registry.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

export const PUBLISHER_CONTROLLER = "clustertrustbundle-publisher";

export interface TrustBundlePublisherOptions extends ControllerOptions {
  readonly bundles: ResourceClient<ClusterTrustBundle>;
  readonly informer: Informer<ClusterTrustBundle>;
  readonly signers: SignerRegistry;
  readonly names: GroupNames;
  /**
   * How often every signer's anchors are compared again (default 60 s): anchors change without any API event when
   * CA files are replaced or when a retired CA's last certificate expires.
   */
  readonly resyncMs?: number;
}

/** `<signerName with / → :>:<first 16 hex digits of the SHA-256 of the canonical bundle>`. */
export function trustBundleName(signerName: string, canonicalBundle: string): string {
  return `${trustBundleNamePrefix(signerName)}${createHash("sha256").update(canonicalBundle).digest("hex").slice(0, 16)}`;
}

type Result = "created" | "updated" | "unchanged";

export class TrustBundlePublisher extends Controller {
  private readonly o: TrustBundlePublisherOptions;
  private readonly resyncMs: number;

  constructor(options: TrustBundlePublisherOptions) {
    super(PUBLISHER_CONTROLLER, [options.informer], options);
    const resyncMs = options.resyncMs ?? 60_000;
    if (!(resyncMs > 0)) throw invalidOption("resyncMs", "> 0", options.resyncMs);
    this.o = options;
    this.resyncMs = resyncMs;
  }

  protected subscribe(): (() => void)[] {
    const enqueue = (b: ClusterTrustBundle): void => {
      const signer = b.spec?.signerName;
      if (signer && this.o.signers.has(signer)) this.queue.add(signer);
    };
    return [this.o.informer.addHandlers({ onAdd: enqueue, onUpdate: (_old, b) => enqueue(b), onDelete: enqueue })];
  }

  protected override onSynced(): void {
    this.repeat(this.resyncMs, () => {
      for (const name of this.o.signers.names()) this.queue.add(name);
    });
  }

  protected async sync(signerName: string, signal: AbortSignal): Promise<void> {
    if (!this.o.signers.has(signerName)) return;
    const anchors = this.o.signers.get(signerName).trustAnchors();
    if (anchors.length === 0) throw new PlatformError("SIGNER_NOT_READY", `signer ${signerName} has no trust anchors to publish yet`);
    const bundle = canonicalizeBundle(anchors);
    const name = trustBundleName(signerName, bundle);
    const mine = this.o.informer.list().filter((b) => b.spec?.signerName === signerName);
    const result = await this.ensure(signerName, name, bundle, mine.find((b) => b.metadata.name === name), signal);
    let deleted = 0;
    for (const stray of mine.filter((b) => b.metadata.name !== name)) {
      try {
        await this.o.bundles.delete(stray.metadata.name!, { preconditions: { uid: stray.metadata.uid! }, signal });
        deleted++;
      } catch (err) {
        if (!isPlatformError(err, "NOT_FOUND") && !isPlatformError(err, "CONFLICT")) throw err;
      }
    }
    this.metrics?.trustBundleSyncs.inc({ signer: signerName, result });
    if (deleted > 0) this.metrics?.trustBundleSyncs.inc({ signer: signerName, result: "deleted" }, deleted);
    if (result !== "unchanged" || deleted > 0) {
      this.log.info({ signerName, bundle: name, result, deleted, anchors: anchors.length }, "trust bundle published");
    }
  }

  /** Creates the bundle, or puts the wanted anchors back into it; compares first so a steady state writes nothing. */
  private async ensure(signerName: string, name: string, bundle: string, cached: ClusterTrustBundle | undefined, signal: AbortSignal): Promise<Result> {
    let current = cached;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        if (!current) {
          await this.o.bundles.create(this.desired(signerName, name, bundle), { signal });
          return "created";
        }
        if (current.spec?.trustBundle === bundle && current.spec.signerName === signerName) return "unchanged";
        await this.o.bundles.update({ ...this.desired(signerName, name, bundle), metadata: { ...current.metadata } }, { signal });
        return "updated";
      } catch (err) {
        // The cache is behind: read the object as it is and decide again.
        if (!isPlatformError(err, "ALREADY_EXISTS") && !isPlatformError(err, "CONFLICT") && !isPlatformError(err, "NOT_FOUND")) throw err;
        current = await this.o.bundles.get(name, { signal }).catch((e: unknown) => {
          if (isPlatformError(e, "NOT_FOUND")) return undefined;
          throw e;
        });
      }
    }
    throw new PlatformError("CONFLICT", `clustertrustbundle ${name} kept changing while it was published`, { retryable: true });
  }

  private desired(signerName: string, name: string, bundle: string): ClusterTrustBundle {
    return {
      apiVersion: `${this.o.names.certificates}/${CLUSTER_TRUST_BUNDLE_VERSION}`,
      kind: CLUSTER_TRUST_BUNDLE_KIND,
      metadata: { name },
      spec: { signerName, trustBundle: bundle },
    };
  }
}
