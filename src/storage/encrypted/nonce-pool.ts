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
    const at = this.#take();
    return this.#block.subarray(at, at + NONCE_BYTES);
  }

  /** Writes the next unused random nonce into `out` at `offset` (no view made: a synchronous sealing copies it into its header). */
  writeNext(out: Uint8Array, offset: number): void {
    const at = this.#take();
    const block = this.#block;
    for (let i = 0; i < NONCE_BYTES; i++) out[offset + i] = block[at + i]!;
  }

  /** The offset of the next unused nonce in the current block, refilled first when it is used up. */
  #take(): number {
    if (this.#offset + NONCE_BYTES > this.#block.length) {
      this.#block = randomBytes(NONCE_BYTES * NONCES_PER_DRAW);
      this.#offset = 0;
    }
    const at = this.#offset;
    this.#offset = at + NONCE_BYTES;
    return at;
  }
}
