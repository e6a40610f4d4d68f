import { utf8Encode } from './utf8.js';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += HEX[b];
  return out;
}

function subtle(): SubtleCrypto {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (!c?.subtle) throw new Error('WebCrypto (globalThis.crypto.subtle) is not available in this runtime');
  return c.subtle;
}

/**
 * SHA-256 of `data` (bytes, or a string taken as UTF-8) as lower-case hex, through
 * WebCrypto so the same code runs in Node 20, browsers, Deno, Bun and edge runtimes.
 */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === 'string' ? utf8Encode(data) : data;
  const digest = await subtle().digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return toHex(new Uint8Array(digest));
}
