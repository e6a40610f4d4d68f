import { sha256Hex, sha256HexOfTextSync } from '../../codec/sha256.js';
import { NAME_TAG_BYTES } from './value-format.js';

/** Tags kept for keys met again (a run's `latest` and index), before the cache starts over. */
const CACHED_TAGS = 64;

/**
 * The name tags of storage keys, for shared values (`value-format.ts`): the first 8 bytes of
 * SHA-256 over the store's secret name key (as hex) followed by the key. Keyed, so only a
 * holder of the store's key can compute a tag, let alone find another key name with the same
 * one; a prefix key under a truncated digest leaves nothing to extend. One Node one-shot hash
 * per new key: a tenth of a sealing, which a shared value saves.
 */
export class NameTags {
  readonly #prefix: string;
  readonly #cache = new Map<string, Uint8Array>();

  /** `nameKeyHex`: the store's name key, 64 hex digits. */
  constructor(nameKeyHex: string) {
    this.#prefix = nameKeyHex;
  }

  /** The tag of `key`, where the runtime hashes synchronously (Node); else `undefined`. */
  sync(key: string): Uint8Array | undefined {
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const digest = sha256HexOfTextSync(this.#prefix + key);
    return digest === undefined ? undefined : this.#keep(key, digest);
  }

  /** The tag of `key`, in any runtime. */
  async of(key: string): Promise<Uint8Array> {
    return this.sync(key) ?? this.#keep(key, await sha256Hex(this.#prefix + key));
  }

  #keep(key: string, digest: string): Uint8Array {
    const tag = new Uint8Array(NAME_TAG_BYTES);
    const view = new DataView(tag.buffer);
    view.setUint32(0, Number.parseInt(digest.slice(0, 8), 16));
    view.setUint32(4, Number.parseInt(digest.slice(8, 16), 16));
    if (this.#cache.size >= CACHED_TAGS) this.#cache.clear();
    this.#cache.set(key, tag);
    return tag;
  }
}
