import { NONCE_BYTES, randomBytes } from './primitives.js';

/** Nonces drawn per refill: one call to the random generator serves this many values. */
const NONCES_PER_DRAW = 256;

/**
 * Random 96-bit AES-GCM nonces, drawn from the platform's cryptographic generator in blocks.
 * A call to `getRandomValues` costs about as much as sealing a small value, whatever its length,
 * so one draw serves {@link NONCES_PER_DRAW} values. Each nonce is handed out once; a refill
 * takes a new block rather than overwriting the old one, so a nonce already handed out (which
 * a WebCrypto call or a header may still read) never changes.
 */
export class NoncePool {
  #block: Uint8Array = new Uint8Array(0);
  #offset = 0;

  /** The next unused random nonce. */
  next(): Uint8Array {
    if (this.#offset + NONCE_BYTES > this.#block.length) {
      this.#block = randomBytes(NONCE_BYTES * NONCES_PER_DRAW);
      this.#offset = 0;
    }
    const nonce = this.#block.subarray(this.#offset, this.#offset + NONCE_BYTES);
    this.#offset += NONCE_BYTES;
    return nonce;
  }
}
