// Requests' self-signatures checked ahead, on libuv's pool (native/verify-async.c), one job at a time: the thread that
// later parses a request finds it in the memory of verified requests instead of verifying it itself.
import { nativeCrypto } from "./native.js";
import { rememberVerified, unverifiedKey, type VerifiedKey } from "./csr-signature.js";

interface Waiting {
  readonly der: Uint8Array;
  readonly key: VerifiedKey;
  readonly done: () => void;
}

/** One pool job holds at most this many requests (the native side takes up to 4,096). */
const MAX_BATCH = 512;
let waiting: Waiting[] = [];
/** Whether a job is on the pool: requests arriving meanwhile wait for it and go together as the next job. */
let running = false;

/**
 * Checks the signature of `der` on another thread and, when it verifies, remembers it as verified (this thread's
 * memory and the process's shared one), so parseCsr and the controllers skip it. It decides nothing: a request it
 * cannot read or that does not verify is left for parseCsr to judge, with parseCsr's error. Undefined, with nothing to
 * wait for, when the request was verified before or the native accelerator is absent.
 */
export function verifyAhead(der: Uint8Array): Promise<void> | undefined {
  if (nativeCrypto?.verifyRequests === undefined) return undefined;
  const key = unverifiedKey(der);
  if (key === undefined) return undefined;
  return new Promise<void>((done) => {
    // One job at a time: each job wakes a pool thread, which on a busy host takes the server's own core while it runs
    // (docs/benchmarks.md, 2026-11-28), so fewer and larger jobs. Requests arriving while a job runs go together as the
    // next one, and P-256 ones then share an inversion; on an idle server a request goes at once. No timer is involved,
    // so a test suite's fake timers cannot hold a create.
    waiting.push({ der, key, done });
    submit();
  });
}

function submit(): void {
  if (running || waiting.length === 0) return;
  const batch = waiting.length <= MAX_BATCH ? waiting : waiting.slice(0, MAX_BATCH);
  waiting = waiting.length <= MAX_BATCH ? [] : waiting.slice(MAX_BATCH);
  const ends = new Uint32Array(batch.length);
  let size = 0;
  for (let i = 0; i < batch.length; i++) ends[i] = size += batch[i]!.der.byteLength;
  const bytes = new Uint8Array(size);
  for (let i = 0; i < batch.length; i++) bytes.set(batch[i]!.der, i === 0 ? 0 : ends[i - 1]!);
  const finish = (verdicts: unknown): void => {
    running = false;
    for (let i = 0; i < batch.length; i++) {
      if (verdicts instanceof Int8Array && verdicts[i] === 1) rememberVerified(batch[i]!.key);
      batch[i]!.done();
    }
    submit();
  };
  let job: Promise<Int8Array | number> | null;
  try {
    job = nativeCrypto!.verifyRequests!(bytes, ends);
  } catch {
    job = null;
  }
  if (job === null) return finish(undefined);
  running = true;
  job.then(finish, () => finish(undefined));
}
