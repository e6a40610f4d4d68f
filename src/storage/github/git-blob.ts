import { toHex } from '../../codec/sha256.js';
import { utf8Encode } from '../../codec/utf8.js';
import { assertBytesArgument } from '../../contract/arguments.js';

function subtle(): SubtleCrypto {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (!c?.subtle) throw new Error('WebCrypto (globalThis.crypto.subtle) is not available in this runtime');
  return c.subtle;
}

/**
 * Git's object id of a blob holding `bytes` — SHA-1 of `blob <size>\0<bytes>`, what
 * `git hash-object` prints and what GitHub reports as a file's `sha`. githubStorage uses
 * it as the version of a key, to verify a write without downloading it again, and to
 * recognise its own write after a timeout. Computed with WebCrypto, so it runs
 * everywhere the adapter does.
 */
export async function gitBlobSha(bytes: Uint8Array): Promise<string> {
  assertBytesArgument(bytes, 'gitBlobSha');
  const header = utf8Encode(`blob ${bytes.length}\0`);
  const buf = new Uint8Array(header.length + bytes.length);
  buf.set(header, 0);
  buf.set(bytes, header.length);
  return toHex(new Uint8Array(await subtle().digest('SHA-1', buf)));
}
