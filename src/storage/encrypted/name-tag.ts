import { sipHash24 } from './siphash.js';

const encoder = new TextEncoder();

/**
 * The name tags of storage keys, for shared values (`value-format.ts`): SipHash-2-4 of the
 * key's UTF-8 under the store's name key, 8 bytes. Keyed, so only a holder of the store's key
 * can compute a tag, let alone find another key name with the same one. In plain JavaScript:
 * cheaper on a key name than a call into the runtime's hash.
 */
export class NameTags {
  readonly #key: Uint8Array;
  // The last two keys tagged, the more recently used first: a checkpoint tags a new history key
  // and its run's `latest`, which stays while history keys come and go. No map: a new key
  // would cost a string hash to look up.
  #recent: [string, Uint8Array] | undefined;
  #older: [string, Uint8Array] | undefined;
  #scratch = new Uint8Array(256);

  /** `nameKey`: the store's name key, 16 bytes. */
  constructor(nameKey: Uint8Array) {
    this.#key = nameKey;
  }

  /** The 8-byte tag of `key`. */
  of(key: string): Uint8Array {
    if (this.#recent?.[0] === key) return this.#recent[1];
    const older = this.#older;
    if (older?.[0] === key) {
      this.#older = this.#recent;
      this.#recent = older;
      return older[1];
    }
    const tag = sipHash24(this.#key, this.#utf8(key));
    // The new key becomes the most recent and the most recent the older: a checkpoint's new
    // history key then leaves its run's `latest` in the cache, for the next checkpoint.
    this.#older = this.#recent;
    this.#recent = [key, tag];
    return tag;
  }

  /** `key` as UTF-8, in a scratch buffer (valid until the next call): key names are mostly ASCII, copied as is. */
  #utf8(key: string): Uint8Array {
    if (this.#scratch.length < key.length * 3) this.#scratch = new Uint8Array(key.length * 3);
    const buf = this.#scratch;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      if (c > 0x7f) return buf.subarray(0, encoder.encodeInto(key, buf).written);
      buf[i] = c;
    }
    return buf.subarray(0, key.length);
  }
}
