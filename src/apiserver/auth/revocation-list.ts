// The revoked client certificates: by issuer and serial, every CSR with a Revoked condition; by serial alone, every
// CertificateRevocation. Listed from the server's own storage and then followed through its watches, so a revocation
// is enforced as soon as it is stored.
import { Buffer } from "node:buffer";
import type { GroupNames } from "../../api/group.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import { CERTIFICATE_REVOCATION_PLURAL, normalizeSerialHex, type CertificateRevocation } from "../../api/types/certificate-revocation.js";
import { revokedCondition } from "../../api/revocation.js";
import { invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { decodePem } from "../../pki/pem.js";
import { revocationIdOf, revocationKey } from "../../pki/revocation-id.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
import type { Storage, StorageEvent, Watch } from "../storage/types.js";

/** What to do with a client certificate while the list cannot be read: refuse it (default) or accept it. */
export type RevocationUnavailable = "deny" | "allow";
export const REVOCATION_UNAVAILABLE: readonly RevocationUnavailable[] = ["deny", "allow"];

export interface StorageRevocationListOptions {
  readonly storage: Storage;
  readonly names: GroupNames;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Default "deny": an unknown revocation state is not a reason to let a possibly revoked certificate in. */
  readonly whenUnavailable?: RevocationUnavailable;
  /** Wait before listing again after a failed list or a broken watch; default 1000 ms. */
  readonly retryMs?: number;
}

export class StorageRevocationList {
  readonly #storage: Storage;
  readonly #prefix: string;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #whenUnavailable: RevocationUnavailable;
  readonly #retryMs: number;
  readonly #serialPrefix: string;
  /**
   * Refusal text per revocation key (`<issuer>/<SERIAL>` for a CSR's certificate, `*` and `/<SERIAL>` for a revocation by serial),
   * and the key each stored object contributed (for updates and deletes).
   */
  readonly #revoked = new Map<string, string>();
  readonly #byObject = new Map<string, { readonly key: string; readonly refusal: string }>();
  #watches: Watch[] = [];
  #cancelRetry: CancelTimer | undefined;
  /** Why the list is not current (never loaded, or its watch broke); undefined while it is. */
  #unavailable: string | undefined = "the revocation list has not been loaded yet";
  #running = false;

  constructor(options: StorageRevocationListOptions) {
    if (!options?.storage) throw invalidOption("storage", "to be a Storage", options?.storage);
    if (!options.names) throw invalidOption("names", "to be GroupNames", options.names);
    const when = options.whenUnavailable ?? "deny";
    if (!REVOCATION_UNAVAILABLE.includes(when)) throw invalidOption("whenUnavailable", `to be one of ${REVOCATION_UNAVAILABLE.join(", ")}`, when);
    const retryMs = options.retryMs ?? 1000;
    if (!Number.isInteger(retryMs) || retryMs < 1) throw invalidOption("retryMs", "to be an integer ≥ 1", retryMs);
    this.#storage = options.storage;
    // The storage key layout `/<group>/<resource>/...` is part of the Storage contract.
    this.#prefix = `/${options.names.certificates}/certificatesigningrequests/`;
    this.#serialPrefix = `/${options.names.certificates}/${CERTIFICATE_REVOCATION_PLURAL}/`;
    this.#logger = options.logger ?? silentLogger();
    this.#clock = options.clock ?? systemClock;
    this.#whenUnavailable = when;
    this.#retryMs = retryMs;
  }

  /** Lists the CSRs and CertificateRevocations (rejects when the first list fails), then follows their changes. */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    signal?.addEventListener("abort", () => this.stop(), { once: true });
    try {
      await this.#sync(true);
    } catch (err) {
      this.stop();
      throw err;
    }
  }

  stop(): void {
    this.#running = false;
    this.#cancelWatches();
    this.#cancelRetry?.();
    this.#cancelRetry = undefined;
  }

  /**
   * The refusal for a certificate (by `revocationKey`), or undefined when it may be used. A CertificateRevocation
   * names a signer, not an issuer: its serial is refused under any issuer, as only certificates whose chain the server
   * trusts for clients get here, and the product's serials are random 128-bit values (docs/revocation.md).
   */
  check(key: string): string | undefined {
    const revoked = this.#revoked.get(key) ?? this.#revoked.get(`*/${key.slice(key.lastIndexOf("/") + 1)}`);
    if (revoked !== undefined) return revoked;
    if (this.#unavailable !== undefined && this.#whenUnavailable === "deny") return `x509: revocation status unknown: ${this.#unavailable}`;
    return undefined;
  }

  /** Number of revoked certificates known. */
  get size(): number {
    return this.#revoked.size;
  }

  #cancelWatches(): void {
    for (const w of this.#watches) w.cancel();
    this.#watches = [];
  }

  async #sync(initial = false): Promise<void> {
    this.#cancelWatches();
    try {
      const lists = await Promise.all([this.#prefix, this.#serialPrefix].map(async (prefix) => ({ prefix, ...(await this.#storage.list(prefix)) })));
      if (!this.#running) return;
      this.#revoked.clear();
      this.#byObject.clear();
      for (const { items } of lists) for (const kv of items) this.#put(kv.key, kv.value);
      this.#watches = lists.map(({ prefix, revision }) =>
        this.#storage.watch(prefix, { fromRevision: revision }, (event) => this.#apply(event), (err) => this.#retry(err)),
      );
      this.#unavailable = undefined;
    } catch (err) {
      if (initial) throw err;
      this.#retry(err);
    }
  }

  #apply(event: StorageEvent): void {
    if (event.type === "DELETE") this.#forget(event.key);
    else this.#put(event.key, event.kv.value);
  }

  #forget(objectKey: string): void {
    const key = this.#byObject.get(objectKey)?.key;
    if (key === undefined) return;
    this.#byObject.delete(objectKey);
    // Two signers' revocations may name one serial: the serial stays refused, naming the other, while either exists.
    for (const other of this.#byObject.values()) if (other.key === key) return void this.#revoked.set(key, other.refusal);
    this.#revoked.delete(key);
  }

  #put(objectKey: string, value: string): void {
    if (objectKey.startsWith(this.#serialPrefix)) return this.#putSerial(objectKey, value);
    this.#putCsr(objectKey, value);
  }

  #set(objectKey: string, key: string, refusal: string): void {
    this.#byObject.set(objectKey, { key, refusal });
    this.#revoked.set(key, refusal);
  }

  #putSerial(objectKey: string, value: string): void {
    try {
      const revocation = JSON.parse(value) as CertificateRevocation;
      const serial = normalizeSerialHex(revocation.spec.serialNumber);
      if (serial === undefined) throw new Error(`serialNumber ${JSON.stringify(revocation.spec.serialNumber)} is not hex`);
      this.#set(objectKey, `*/${serial.toUpperCase()}`, `x509: certificate has been revoked (${revocation.spec.reason}; CertificateRevocation ${revocation.metadata.name})`);
    } catch (err) {
      this.#logger.error({ key: objectKey, err }, "stored CertificateRevocation cannot be read; ignored");
    }
  }

  #putCsr(csrKey: string, value: string): void {
    // Most CSR writes are not revocations: skip parsing them.
    if (!value.includes('"Revoked"')) return this.#forget(csrKey);
    try {
      const csr = JSON.parse(value) as CertificateSigningRequest;
      const condition = revokedCondition(csr);
      const certificate = csr.status?.certificate;
      if (!condition || !certificate) return this.#forget(csrKey);
      const leaf = decodePem(Buffer.from(certificate, "base64").toString("latin1"), { label: "CERTIFICATE" })[0]!;
      const key = revocationKey(revocationIdOf(leaf.der));
      this.#set(csrKey, key, `x509: certificate has been revoked (${condition.reason ?? "unspecified"}; CertificateSigningRequest ${csr.metadata.name})`);
    } catch (err) {
      this.#logger.error({ key: csrKey, err }, "stored CSR with a Revoked condition cannot be read; ignored");
    }
  }

  #retry(err: unknown): void {
    if (!this.#running) return;
    this.#unavailable = `its watch of the storage broke (${err instanceof Error ? err.message : String(err)})`;
    this.#logger.warn({ err }, "revocation list lost its watch; listing again");
    if (this.#cancelRetry !== undefined) return;
    this.#cancelRetry = this.#clock.setTimer(this.#retryMs, () => {
      this.#cancelRetry = undefined;
      void this.#sync();
    });
  }
}
