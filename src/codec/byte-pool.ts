/** Buffers up to this many bytes are views of a shared slab (see {@link pooledBytes}). */
export const POOLED_MAX = 4096;
/** Size of one slab: a small buffer kept long keeps at most this much alive. */
const SLAB_BYTES = 16 * 1024;

/** The slab small buffers are cut from, and how much of it is taken. */
const pool: { slab: ArrayBuffer | undefined; used: number } = { slab: undefined, used: 0 };

/**
 * `length` zeroed bytes for a small document the writer or the saver encodes once and never
 * changes (a sealed document, a head): up to {@link POOLED_MAX}, a view of a shared slab, each
 * view its own bytes, never handed out again (as Node's `Buffer.allocUnsafe` pools). An
 * `ArrayBuffer` of its own per document, made on every put, cost about what hashing the
 * document does, to allocate and collect. A view's `.buffer` holds other documents' bytes, as a
 * pooled Buffer's does: for bytes handed to a store to write, not for values handed to a caller.
 */
export function pooledBytes(length: number): Uint8Array {
  if (length > POOLED_MAX) return new Uint8Array(length);
  if (pool.slab === undefined || pool.used + length > SLAB_BYTES) {
    pool.slab = new ArrayBuffer(SLAB_BYTES);
    pool.used = 0;
  }
  const view = new Uint8Array(pool.slab, pool.used, length);
  // Eight-byte aligned, as Node's pool aligns its slices.
  pool.used += (length + 7) & ~7;
  return view;
}
