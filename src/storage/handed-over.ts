/**
 * Buffers a writer hands over to the store it puts them in: it made them itself and nothing
 * will ever change them, so `memoryStorage` may keep such a buffer as its stored value instead
 * of copying it (issue 13, defect 6: the parts of a split 64 MiB checkpoint were held twice,
 * once by the writer and once by the store). Every other buffer is still copied on the way in.
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

/** The bytes a store keeps for a put: `bytes` itself when handed over, else a copy the caller can no longer change. */
export function ownedCopy(bytes: Uint8Array): Uint8Array {
  return handedOver.has(bytes) ? bytes : bytes.slice();
}

/**
 * Stores that copy a put's (and a batch's) bytes before the call returns — `memoryStorage`,
 * whose `put` copies before its first await. A caller may then seal its next document into
 * the same buffer as soon as the call has returned (the LangGraph saver: issue 17). A store
 * that may still read the bytes later (fs's journal, a network store) is never marked.
 * Internal, as above; a wrapper around a marked store is not marked.
 */
const copyingStores = new WeakSet<object>();

/** Marks `store` as copying its input before each call returns (see above) and returns it. */
export function markCopiesOnPut<T extends object>(store: T): T {
  copyingStores.add(store);
  return store;
}

/** Whether `store` copies a put's bytes before the call returns, so the caller may reuse its buffer at once. */
export function copiesOnPut(store: object): boolean {
  return copyingStores.has(store);
}
