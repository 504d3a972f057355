// SHA-256 digests of requests whose self-signature verified, in shared memory, so that the threads of one process (the
// API server and the controllers of `platform-ca up`) verify the same request bytes once instead of once per thread.
import { createHash } from "node:crypto";
import { invalidOption } from "../errors.js";

const DIGEST_BYTES = 32;
const DEFAULT_SLOTS = 16_384;

/**
 * A direct-mapped table of digests: a digest lives in the slot its first four bytes pick, and a newer digest for the
 * same slot replaces it (the memo forgets, it never errs). Writes are not atomic, so a reader racing a writer may see a
 * slot half old, half new: such a slot matches no digest but one that is fully written, so a race can only cause a
 * miss (one more verification), never a match for bytes that were not verified.
 */
export class SharedVerifiedMemo {
  readonly buffer: SharedArrayBuffer;
  readonly #bytes: Uint8Array;
  readonly #slots: number;

  /** A new table of `slots` entries (32 bytes each), or a view of one another thread made (its `buffer`). */
  constructor(from: SharedArrayBuffer | number = DEFAULT_SLOTS) {
    if (typeof from === "number") {
      if (!Number.isSafeInteger(from) || from < 1) throw invalidOption("slots", "to be a whole number ≥ 1", from);
      this.buffer = new SharedArrayBuffer(from * DIGEST_BYTES);
    } else {
      if (!(from instanceof SharedArrayBuffer) || from.byteLength === 0 || from.byteLength % DIGEST_BYTES !== 0) {
        throw invalidOption("buffer", `to be a SharedArrayBuffer of whole ${DIGEST_BYTES}-byte slots`, from);
      }
      this.buffer = from;
    }
    this.#bytes = new Uint8Array(this.buffer);
    this.#slots = this.buffer.byteLength / DIGEST_BYTES;
  }

  /** The key of a request: the SHA-256 of its whole DER (the signed part, the algorithm and the signature). */
  static digest(der: Uint8Array): Buffer {
    return createHash("sha256").update(der).digest();
  }

  has(digest: Uint8Array): boolean {
    const at = this.#slot(digest);
    for (let i = 0; i < DIGEST_BYTES; i++) if (this.#bytes[at + i] !== digest[i]) return false;
    return true;
  }

  add(digest: Uint8Array): void {
    this.#bytes.set(digest.subarray(0, DIGEST_BYTES), this.#slot(digest));
  }

  #slot(digest: Uint8Array): number {
    if (digest.length !== DIGEST_BYTES) throw invalidOption("digest", `to be ${DIGEST_BYTES} bytes`, digest.length);
    const index = ((digest[0]! | (digest[1]! << 8) | (digest[2]! << 16) | (digest[3]! << 24)) >>> 0) % this.#slots;
    return index * DIGEST_BYTES;
  }
}
