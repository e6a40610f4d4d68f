/**
 * Buffers a writer hands over to the store it puts them in: it made them itself and nothing
 * will ever change them, so `memoryStorage` may keep such a buffer as its stored value instead
 * of copying it (else the parts of a split 64 MiB checkpoint would be held twice, once by the
 * writer and once by the store). Every other buffer is still copied on the way in.
 * A WeakSet: being handed over keeps no buffer alive. Internal: not exported to users.
 */
const handedOver = new WeakSet<Uint8Array>();

/** Below this size a copy costs less than remembering the buffer (a 1 KB checkpoint's hot path stays as it was). */
const HAND_OVER_MIN = 64 * 1024;

/** Marks `bytes` as handed over (see above) and returns it. Only large buffers of their own (`byteOffset` 0, the whole `ArrayBuffer`). */
export function handOver<T extends Uint8Array>(bytes: T): T {
  if (bytes.length >= HAND_OVER_MIN && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) handedOver.add(bytes);
  return bytes;
}

/** Whether `bytes` was handed over: nothing will ever change it, so a view of it may be kept instead of a copy. */
export const isHandedOver = (bytes: Uint8Array): boolean => handedOver.has(bytes);

/** The bytes a store keeps for a put: `bytes` itself when handed over, else a copy the caller can no longer change. */
export function ownedCopy(bytes: Uint8Array): Uint8Array {
  return handedOver.has(bytes) ? bytes : bytes.slice();
}
