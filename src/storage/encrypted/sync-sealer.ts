import { MAX_KEY_LENGTH } from '../keys.js';
import { handOver } from '../handed-over.js';
import type { NameTags } from './name-tag.js';
import type { SyncAead } from './native-aead.js';
import type { NoncePool } from './nonce-pool.js';
import { FIELD_START, HEADER_BYTES, NAME_TAG_BYTES, NONCE_AT, SHARED_FORMAT, SINGLE_KEY_FORMAT, writeMagic } from './value-format.js';

const encoder = new TextEncoder();

/**
 * Seals values synchronously (where the runtime's AEAD is synchronous: Node) through one
 * scratch buffer per store, which holds the header and the rest of the associated data.
 * Node's cipher reads the nonce and associated data, and the sealing copies the header into
 * its output, before the call returns, so the next sealing may overwrite them: a small
 * checkpoint's sealing allocates its output and what Node's cipher allocates, nothing more.
 */
export class SyncSealer {
  readonly #aead: SyncAead;
  readonly #nonces: NoncePool;
  readonly #nameTags: NameTags;
  readonly #dataKeyIdBytes: Uint8Array;
  /** The header, then the storage key's UTF-8 (format 1) or the two name tags in order (format 2); grown for a longer key. */
  #scratch!: Uint8Array;
  #header!: Uint8Array;
  #nonce!: Uint8Array;
  #keyRoom!: Uint8Array;
  #sharedAad!: Uint8Array;

  constructor(aead: SyncAead, nonces: NoncePool, nameTags: NameTags, dataKeyIdBytes: Uint8Array) {
    this.#aead = aead;
    this.#nonces = nonces;
    this.#nameTags = nameTags;
    this.#dataKeyIdBytes = dataKeyIdBytes;
    this.#allocate(HEADER_BYTES + MAX_KEY_LENGTH * 3);
  }

  /** `plaintext` sealed for `key` alone (format 1). */
  single(key: string, plaintext: Uint8Array): Uint8Array {
    if (HEADER_BYTES + key.length * 3 > this.#scratch.length) this.#allocate(HEADER_BYTES + key.length * 3);
    const s = this.#scratch;
    writeMagic(s, SINGLE_KEY_FORMAT);
    const id = this.#dataKeyIdBytes;
    for (let i = 0; i < id.length; i++) s[FIELD_START + i] = id[i]!;
    this.#nonces.writeNext(s, NONCE_AT);
    const aad = s.subarray(0, HEADER_BYTES + this.#utf8(key));
    // Made here and never touched again: the inner store may keep it rather than copy it.
    return handOver(this.#aead.seal(this.#nonce, aad, plaintext, this.#header));
  }

  /**
   * `plaintext` sealed once for both `a` and `b` (format 2): the key field is the XOR of their
   * name tags, the associated data the header and both tags in byte order (as
   * `sharedAssociatedData` rebuilds it under either key).
   */
  shared(a: string, b: string, plaintext: Uint8Array): Uint8Array {
    const tagA = this.#nameTags.of(a);
    const tagB = this.#nameTags.of(b);
    const s = this.#scratch;
    writeMagic(s, SHARED_FORMAT);
    for (let i = 0; i < NAME_TAG_BYTES; i++) s[FIELD_START + i] = tagA[i]! ^ tagB[i]!;
    this.#nonces.writeNext(s, NONCE_AT);
    const aFirst = compareBytes(tagA, tagB) <= 0;
    for (let i = 0; i < NAME_TAG_BYTES; i++) {
      s[HEADER_BYTES + i] = aFirst ? tagA[i]! : tagB[i]!;
      s[HEADER_BYTES + NAME_TAG_BYTES + i] = aFirst ? tagB[i]! : tagA[i]!;
    }
    return handOver(this.#aead.seal(this.#nonce, this.#sharedAad, plaintext, this.#header));
  }

  /** A scratch buffer of `size` bytes, and its views (made again only for a key longer than any valid storage key: callers check keys first). */
  #allocate(size: number): void {
    this.#scratch = new Uint8Array(size);
    this.#header = this.#scratch.subarray(0, HEADER_BYTES);
    this.#nonce = this.#scratch.subarray(NONCE_AT, HEADER_BYTES);
    this.#keyRoom = this.#scratch.subarray(HEADER_BYTES);
    this.#sharedAad = this.#scratch.subarray(0, HEADER_BYTES + 2 * NAME_TAG_BYTES);
  }

  /** Writes `key` as UTF-8 after the header; returns its length. Key names are mostly ASCII, copied as is. */
  #utf8(key: string): number {
    const s = this.#scratch;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      if (c > 0x7f) return encoder.encodeInto(key, this.#keyRoom).written;
      s[HEADER_BYTES + i] = c;
    }
    return key.length;
  }
}

/** Negative, zero or positive as `a` sorts before, with or after `b` byte by byte (both of one length). */
function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}
