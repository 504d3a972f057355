// SHA-256 digests of requests whose self-signature verified, in shared memory, so that the threads of one process (the
// API server and the controllers of `platform-ca up`) verify the same request bytes once instead of once per thread.
import { createHash } from "node:crypto";
import { invalidOption } from "../errors.js";

const DIGEST_BYTES = 32;
/** Digests per set: a digest is forgotten only after four newer ones landed in its set. */
const WAYS = 4;
const SET_BYTES = WAYS * DIGEST_BYTES;
/** 16,384 sets of four (2 MiB and 16 KiB): a burst's approver may read a request thousands of creates later. */
const DEFAULT_SETS = 16_384;

/**
 * A set-associative table of digests: a digest lives in one of the four ways of the set its first four bytes pick,
 * and a new digest takes the set's oldest way (a counter per set, after the digests, says which). With one way per set
 * (as before) a burst of 7,000 creates between a request's create and its approval made a third of the approver's
 * reads verify again; with four, a request is forgotten only when four newer ones picked its set.
 * Writes are not atomic, so a reader racing a writer may see a way half old, half new: such a way matches no digest
 * but one that is fully written, so a race can only cause a miss (one more verification), never a match for bytes
 * that were not verified. Two writers racing on one set may take the same way: one digest is lost, again a miss.
 */
export class SharedVerifiedMemo {
  readonly buffer: SharedArrayBuffer;
  readonly #bytes: Uint8Array;
  readonly #sets: number;

  /** A new table of `sets` sets (4 × 32 bytes each, and a byte), or a view of one another thread made (its `buffer`). */
  constructor(from: SharedArrayBuffer | number = DEFAULT_SETS) {
    if (typeof from === "number") {
      if (!Number.isSafeInteger(from) || from < 1) throw invalidOption("sets", "to be a whole number ≥ 1", from);
      this.buffer = new SharedArrayBuffer(from * (SET_BYTES + 1));
    } else {
      if (!(from instanceof SharedArrayBuffer) || from.byteLength === 0 || from.byteLength % (SET_BYTES + 1) !== 0) {
        throw invalidOption("buffer", `to be a SharedArrayBuffer of whole sets (${WAYS} ${DIGEST_BYTES}-byte ways and a byte)`, from);
      }
      this.buffer = from;
    }
    this.#bytes = new Uint8Array(this.buffer);
    this.#sets = this.buffer.byteLength / (SET_BYTES + 1);
  }

  /** The key of a request: the SHA-256 of its whole DER (the signed part, the algorithm and the signature). */
  static digest(der: Uint8Array): Buffer {
    return createHash("sha256").update(der).digest();
  }

  has(digest: Uint8Array): boolean {
    return this.#holds(this.#set(digest), digest);
  }

  add(digest: Uint8Array): void {
    const set = this.#set(digest);
    if (this.#holds(set, digest)) return;
    const counter = this.#sets * SET_BYTES + set;
    const way = this.#bytes[counter]! % WAYS;
    this.#bytes[counter] = (way + 1) % WAYS;
    this.#bytes.set(digest.subarray(0, DIGEST_BYTES), set * SET_BYTES + way * DIGEST_BYTES);
  }

  #holds(set: number, digest: Uint8Array): boolean {
    for (let way = 0; way < WAYS; way++) if (this.#matches(set * SET_BYTES + way * DIGEST_BYTES, digest)) return true;
    return false;
  }

  #matches(at: number, digest: Uint8Array): boolean {
    for (let i = 0; i < DIGEST_BYTES; i++) if (this.#bytes[at + i] !== digest[i]) return false;
    return true;
  }

  #set(digest: Uint8Array): number {
    if (digest.length !== DIGEST_BYTES) throw invalidOption("digest", `to be ${DIGEST_BYTES} bytes`, digest.length);
    return ((digest[0]! | (digest[1]! << 8) | (digest[2]! << 16) | (digest[3]! << 24)) >>> 0) % this.#sets;
  }
}
