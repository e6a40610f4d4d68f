import type { StorageAdapter } from './storage.js';

/**
 * How a store names content chunks (content-addressed dedup). By default a chunk's id is the
 * lower-case hex SHA-256 of its bytes; a store that must not reveal unkeyed hashes of what it
 * holds (an encrypted store) supplies its own keyed scheme here, so equal content is found only
 * by holders of the key.
 */
export interface ContentAddressing {
  /** Name of the scheme, stored beside chunk references (`sha256`, `hmac-sha256:<key id>`). */
  readonly scheme: string;
  /** The id of `bytes`: lower-case hex, the same for the same bytes under the same scheme. */
  id(bytes: Uint8Array): Promise<string>;
  /** `id` without a promise, when the scheme can hash synchronously here; `undefined` otherwise. */
  idSync?(bytes: Uint8Array): string | undefined;
}

/** A store that declares its own {@link ContentAddressing}. */
export interface ContentAddressedStorage extends StorageAdapter {
  readonly contentAddressing: ContentAddressing;
}

/** The store's own content addressing, or `undefined` when it uses the default (SHA-256). */
export function contentAddressingOf(store: StorageAdapter): ContentAddressing | undefined {
  const addressing = (store as Partial<ContentAddressedStorage>).contentAddressing;
  return addressing && typeof addressing.id === 'function' && typeof addressing.scheme === 'string' ? addressing : undefined;
}
