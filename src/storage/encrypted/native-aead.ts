/**
 * Node's synchronous AES-256-GCM and HMAC-SHA-256, reached without an import
 * (`process.getBuiltinModule`, Node >= 20.16) as `codec/sha256.ts` reaches its hash: a
 * WebCrypto call is a round trip through a worker job, which costs more than encrypting a
 * small checkpoint itself. The bytes are the same as WebCrypto's (the same primitive, and
 * tests check each opens the other's); browsers, Deno, Bun and edge runtimes use WebCrypto.
 */

interface NodeCipher {
  setAAD(aad: Uint8Array): unknown;
  update(data: Uint8Array): Uint8Array;
  final(): Uint8Array;
  getAuthTag(): Uint8Array;
  setAuthTag(tag: Uint8Array): unknown;
}

interface NodeCryptoAead {
  createSecretKey(key: Uint8Array): object;
  createCipheriv(algorithm: 'aes-256-gcm', key: object, iv: Uint8Array, options: { authTagLength: number }): NodeCipher;
  createDecipheriv(algorithm: 'aes-256-gcm', key: object, iv: Uint8Array, options: { authTagLength: number }): NodeCipher;
  createHmac(algorithm: 'sha256', key: object): { update(data: Uint8Array): { digest(encoding: 'hex'): string } };
}

const nodeCrypto: NodeCryptoAead | undefined = (() => {
  try {
    const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    const mod = proc?.getBuiltinModule?.('node:crypto') as Partial<NodeCryptoAead> | undefined;
    return mod &&
      typeof mod.createCipheriv === 'function' &&
      typeof mod.createSecretKey === 'function' &&
      typeof mod.createHmac === 'function'
      ? (mod as NodeCryptoAead)
      : undefined;
  } catch {
    return undefined;
  }
})();

/**
 * Node's `Buffer.allocUnsafe`, seen as a plain Uint8Array (whose `slice` copies, where a
 * Buffer's would share): memory from a shared pool, not zeroed, for output written whole
 * before anyone reads it.
 */
const allocUnsafe: ((size: number) => Uint8Array) | undefined = (() => {
  const b = (globalThis as { Buffer?: { allocUnsafe?: (size: number) => Uint8Array } }).Buffer;
  if (typeof b?.allocUnsafe !== 'function') return undefined;
  return (size) => {
    const buf = b.allocUnsafe!(size);
    return new Uint8Array(buf.buffer, buf.byteOffset, size);
  };
})();

const TAG_BYTES = 16;
const GCM_OPTIONS = { authTagLength: TAG_BYTES } as const;

/** Sealed values up to this size are cut from a slab (see {@link SealedSlab}). */
const SLAB_VALUE_LIMIT = 4096;
const SLAB_BYTES = 32768;

/**
 * Where small sealed values are made: views cut from a slab that holds nothing but sealed
 * values (so a view's `.buffer` shows no plaintext, unlike Node's shared Buffer pool), one
 * view per value and one allocation per slab, where a pooled Buffer took a Buffer and a view.
 * Larger values get memory of their own (`Buffer.allocUnsafe` pools only under 4 KiB).
 */
class SealedSlab {
  #slab = new Uint8Array(0);
  #at = 0;

  /** `size` bytes for a sealed value that writes every one of them. */
  take(size: number): Uint8Array {
    if (size > SLAB_VALUE_LIMIT) return allocUnsafe ? allocUnsafe(size) : new Uint8Array(size);
    if (this.#at + size > this.#slab.length) {
      this.#slab = new Uint8Array(SLAB_BYTES);
      this.#at = 0;
    }
    const out = this.#slab.subarray(this.#at, this.#at + size);
    this.#at += size;
    return out;
  }
}

/** Synchronous AES-256-GCM and HMAC-SHA-256 under fixed keys. */
export interface SyncAead {
  /** `header`, then the ciphertext of `plaintext` and its 16-byte tag, in one new buffer. */
  seal(nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array, header: Uint8Array): Uint8Array;
  /** The plaintext, or `undefined` when authentication fails. */
  open(nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array | undefined;
  /** HMAC-SHA-256 of `bytes` under the id key, as hex. */
  mac(bytes: Uint8Array): string;
}

/** A synchronous AEAD under `valueKey` (and HMAC under `macKey`), or `undefined` where the runtime has none. */
export function syncAead(valueKey: Uint8Array, macKey: Uint8Array): SyncAead | undefined {
  const c = nodeCrypto;
  if (!c) return undefined;
  const key = c.createSecretKey(valueKey);
  const hmacKey = c.createSecretKey(macKey);
  const outputs = new SealedSlab();
  return {
    seal(nonce, aad, plaintext, header) {
      const cipher = c.createCipheriv('aes-256-gcm', key, nonce, GCM_OPTIONS);
      cipher.setAAD(aad);
      const body = cipher.update(plaintext);
      const rest = cipher.final();
      const tag = cipher.getAuthTag();
      const size = header.length + body.length + rest.length + tag.length;
      // Every byte is written below (GCM's ciphertext is as long as its plaintext): a slab's or
      // an unzeroed buffer costs less than a new zeroed one, a fifth of a small sealing.
      const out = size === header.length + plaintext.length + TAG_BYTES ? outputs.take(size) : new Uint8Array(size);
      out.set(header, 0);
      out.set(body, header.length);
      // GCM's final() returns nothing: no copy of an empty buffer.
      if (rest.length > 0) out.set(rest, header.length + body.length);
      out.set(tag, header.length + body.length + rest.length);
      return out;
    },
    open(nonce, aad, sealed) {
      if (sealed.length < 16) return undefined;
      const decipher = c.createDecipheriv('aes-256-gcm', key, nonce, GCM_OPTIONS);
      decipher.setAAD(aad);
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      const body = decipher.update(sealed.subarray(0, sealed.length - 16));
      try {
        const rest = decipher.final();
        if (rest.length === 0) return new Uint8Array(body.buffer, body.byteOffset, body.length);
        const out = new Uint8Array(body.length + rest.length);
        out.set(body, 0);
        out.set(rest, body.length);
        return out;
      } catch {
        return undefined;
      }
    },
    mac: (bytes) => c.createHmac('sha256', hmacKey).update(bytes).digest('hex'),
  };
}
