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

interface SyncHash {
  createHash(algorithm: 'sha256'): { update(data: Uint8Array): { digest(encoding: 'hex'): string } };
}

// Where the runtime has node:crypto (Node >= 20.16, Bun, Deno), hash on the calling thread:
// WebCrypto's digest goes through the thread pool and costs ~0.3 ms a call on a loaded
// machine, most of a small checkpoint's time. getBuiltinModule is not an import, so this
// module still loads in browsers and edge runtimes, which take the WebCrypto path.
const syncHash: SyncHash | undefined = (() => {
  try {
    const get = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
    return typeof get === 'function' ? (get('node:crypto') as SyncHash | undefined) : undefined;
  } catch {
    return undefined;
  }
})();

/**
 * SHA-256 of `data` (bytes, or a string taken as UTF-8) as lower-case hex: node:crypto where
 * the runtime has it, else WebCrypto, so the same code runs in Node 20, browsers, Deno, Bun
 * and edge runtimes.
 */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === 'string' ? utf8Encode(data) : data;
  if (syncHash) return syncHash.createHash('sha256').update(bytes).digest('hex');
  const digest = await subtle().digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return toHex(new Uint8Array(digest));
}
