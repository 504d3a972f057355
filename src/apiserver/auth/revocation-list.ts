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
import { systemClock, type Clock } from "../../time/clock.js";
import { FollowerGroup, StorageFollower } from "../storage/follower.js";
import type { KeyValue, Storage, StorageEvent } from "../storage/types.js";

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
  readonly #logger: Logger;
  readonly #whenUnavailable: RevocationUnavailable;
  readonly #serialPrefix: string;
  /** One follower for the CSRs, one for the CertificateRevocations. */
  readonly #followers: FollowerGroup;
  /**
   * Refusal text per revocation key (`<issuer>/<SERIAL>` for a CSR's certificate, `*` and `/<SERIAL>` for a revocation by serial),
   * and the key each stored object contributed (for updates and deletes).
   */
  readonly #revoked = new Map<string, string>();
  readonly #byObject = new Map<string, { readonly key: string; readonly refusal: string }>();
  #loaded = false;
  /** Why a followed prefix is not current (its watch broke), until its next list. */
  readonly #broken = new Map<string, string>();

  constructor(options: StorageRevocationListOptions) {
    if (!options?.storage) throw invalidOption("storage", "to be a Storage", options?.storage);
    if (!options.names) throw invalidOption("names", "to be GroupNames", options.names);
    const when = options.whenUnavailable ?? "deny";
    if (!REVOCATION_UNAVAILABLE.includes(when)) throw invalidOption("whenUnavailable", `to be one of ${REVOCATION_UNAVAILABLE.join(", ")}`, when);
    const retryMs = options.retryMs ?? 1000;
    if (!Number.isInteger(retryMs) || retryMs < 1) throw invalidOption("retryMs", "to be an integer ≥ 1", retryMs);
    // The storage key layout `/<group>/<resource>/...` is part of the Storage contract.
    const csrPrefix = `/${options.names.certificates}/certificatesigningrequests/`;
    this.#serialPrefix = `/${options.names.certificates}/${CERTIFICATE_REVOCATION_PLURAL}/`;
    this.#logger = options.logger ?? silentLogger();
    this.#whenUnavailable = when;
    const clock = options.clock ?? systemClock;
    this.#followers = new FollowerGroup([csrPrefix, this.#serialPrefix].map(
      (prefix) =>
        new StorageFollower({
          storage: options.storage,
          prefix,
          clock,
          retryMs,
          reset: (items) => this.#reset(prefix, items),
          apply: (event) => this.#apply(event),
          broken: (err) => {
            this.#broken.set(prefix, `its watch of the storage broke (${err instanceof Error ? err.message : String(err)})`);
            this.#logger.warn({ err }, "revocation list lost its watch; listing again");
          },
        }),
    ));
  }

  /** Lists the CSRs and CertificateRevocations (rejects when the first list fails), then follows their changes. */
  async start(signal?: AbortSignal): Promise<void> {
    if (await this.#followers.start(signal)) this.#loaded = true;
  }

  stop(): void {
    this.#followers.stop();
  }

  /**
   * The refusal for a certificate (by `revocationKey`), or undefined when it may be used. A CertificateRevocation
   * names a signer, not an issuer: its serial is refused under any issuer, as only certificates whose chain the server
   * trusts for clients get here, and the product's serials are random 128-bit values (docs/revocation.md).
   */
  check(key: string): string | undefined {
    const revoked = this.#revoked.get(key) ?? this.#revoked.get(`*/${key.slice(key.lastIndexOf("/") + 1)}`);
    if (revoked !== undefined) return revoked;
    if (this.#whenUnavailable === "allow") return undefined;
    const unavailable = this.#loaded ? this.#broken.values().next().value : "the revocation list has not been loaded yet";
    return unavailable === undefined ? undefined : `x509: revocation status unknown: ${unavailable}`;
  }

  /** Number of revoked certificates known. */
  get size(): number {
    return this.#revoked.size;
  }

  /** A followed prefix listed again: what it contributed is replaced by what it holds now. */
  #reset(prefix: string, items: readonly KeyValue[]): void {
    for (const objectKey of [...this.#byObject.keys()]) if (objectKey.startsWith(prefix)) this.#forget(objectKey);
    for (const kv of items) this.#put(kv.key, kv.value);
    this.#broken.delete(prefix);
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
}
