// bench:sign's controller rows: SigningController.sync itself, its cache and client in memory, so only its own path is timed.
import type { CertificateSigningRequest } from "../../src/api/types/csr.js";
import type { ResourceClient } from "../../src/client/types.js";
import { SigningController } from "../../src/controller/controllers/signing.js";
import type { EventRecorder } from "../../src/controller/event-recorder.js";
import type { Informer, InformerHandlers } from "../../src/controller/informer.js";
import type { SigningPool } from "../../src/pki/signing-pool.js";
import { SignerRegistry } from "../../signers/registry.js";
import type { Signer } from "../../signers/signer.js";

/** A running signing controller fed by `submit`: each call resolves once the controller wrote that request's certificate. */
export interface ControllerDriver {
  submit(csr: CertificateSigningRequest): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `workers` concurrent syncs (ConcurrentCSRSyncs) over an informer cache and a client that are maps: `submit` puts an
 * approved object in the cache and delivers it as an add, as the informer does; the status write completes at once.
 */
export async function startController(o: { readonly signer: Signer; readonly pool: SigningPool; readonly workers: number }): Promise<ControllerDriver> {
  const objects = new Map<string, CertificateSigningRequest>();
  const written = new Map<string, () => void>();
  let handlers: InformerHandlers<CertificateSigningRequest> | undefined;
  const informer = {
    addHandlers: (h: InformerHandlers<CertificateSigningRequest>) => ((handlers = h), () => (handlers = undefined)),
    get: (key: string) => objects.get(key),
    hasSynced: () => true,
    waitForSync: async () => true,
  } as unknown as Informer<CertificateSigningRequest>;
  const csrs = {
    async update(obj: CertificateSigningRequest) {
      const name = obj.metadata.name!;
      objects.delete(name);
      written.get(name)?.();
      written.delete(name);
      return obj;
    },
  } as unknown as ResourceClient<CertificateSigningRequest>;
  const events = { event: () => undefined } as unknown as EventRecorder;
  const controller = new SigningController({ csrs, informer, signers: new SignerRegistry([o.signer]), events, pool: o.pool, workers: o.workers });
  const stop = new AbortController();
  await controller.start(stop.signal);
  return {
    submit(csr) {
      const name = csr.metadata.name!;
      objects.set(name, csr);
      const done = new Promise<void>((resolve) => written.set(name, resolve));
      handlers!.onAdd!(csr, false);
      return done;
    },
    async stop() {
      stop.abort();
      await controller.stop();
    },
  };
}
