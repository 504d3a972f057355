// Small byte arrays carved from shared slabs.
//
// Every `new Uint8Array(n)` above 64 bytes gets its own off-heap backing store, which V8 tracks one by one: at
// tens of thousands of certificates per second, that bookkeeping was half of the time spent parsing a CSR.
// Node's Buffer pool does the same for the same reason. A slab stays alive while any array cut from it does,
// so only short arrays (≤ 4 KiB) come from slabs, and a slab is never written again once handed out.
const SLAB_BYTES = 64 * 1024;
const MAX_POOLED = 4 * 1024;

let slab = new ArrayBuffer(SLAB_BYTES);
let used = 0;

/** A zero-filled Uint8Array of `length` bytes, a view into a shared slab when it is small. */
export function allocBytes(length: number): Uint8Array {
  if (length > MAX_POOLED) return new Uint8Array(length);
  if (used + length > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    used = 0;
  }
  const out = new Uint8Array(slab, used, length);
  // Keep views 8-byte aligned, as Node's pool does.
  used += (length + 7) & ~7;
  return out;
}

/** A copy of `bytes` in slab memory. */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  const out = allocBytes(bytes.length);
  out.set(bytes);
  return out;
}

/** Lowercase hex of the bytes. */
export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}
