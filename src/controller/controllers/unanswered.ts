// Writes of a controller that failed without an answer (connection lost, the server restarted): the server may have
// committed them. When the informer's cache then shows the CSR as that write left it, the write was this replica's,
// and is counted and announced then, once; a write that did not land is forgotten when the CSR changes otherwise.
import type { CertificateSigningRequest } from "../../api/types/csr.js";

interface Pending {
  /** Whether the cached CSR holds exactly what the write wrote. */
  readonly landed: (csr: CertificateSigningRequest) => boolean;
  /** Counts the write and records its Event. */
  readonly record: (written: CertificateSigningRequest) => void;
}

export class UnansweredWrites {
  readonly #pending = new Map<string, Pending>();

  /** `limit`: at most this many kept (the oldest forgotten first), so a long outage does not grow memory. */
  constructor(private readonly limit: number) {}

  add(uid: string, landed: Pending["landed"], record: Pending["record"]): void {
    if (this.#pending.size >= this.limit) this.#pending.delete(this.#pending.keys().next().value!);
    this.#pending.set(uid, { landed, record });
  }

  /** The cache shows `csr` past the write: records it if it is what the write wrote, and forgets the write either way. */
  settle(csr: CertificateSigningRequest): void {
    if (this.#pending.size === 0) return;
    const uid = csr.metadata.uid ?? "";
    const pending = this.#pending.get(uid);
    if (!pending) return;
    this.#pending.delete(uid);
    if (pending.landed(csr)) pending.record(csr);
  }
}
