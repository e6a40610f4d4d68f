import { utf8Chunks, utf8Encode } from './utf8.js';
import { assertBytesArgument } from '../contract/arguments.js';

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
  update(data: Uint8Array | string): SyncHash;
  digest(encoding: 'hex'): string;
}

/** What savepoint uses of `node:crypto`. */
interface NodeCrypto {
  createHash?: (algorithm: string) => SyncHash;
  hash?: (algorithm: string, data: Uint8Array | string, encoding: 'hex') => string;
}

/**
 * `node:crypto` when the runtime offers it without an import (`process.getBuiltinModule`,
 * Node >= 20.16), so the root entry imports no `node:` module; undefined in browsers, Deno,
 * Bun and edge runtimes, which use WebCrypto (the result is the same).
 */
const nodeCrypto: NodeCrypto | undefined = (() => {
  try {
    const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    return proc?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  } catch {
    return undefined;
  }
})();

/**
 * Node's synchronous, incremental hash: a WebCrypto digest is a round trip through a worker
 * job, which costs more than hashing a small document itself.
 */
const nodeCreateHash: ((algorithm: 'sha256') => SyncHash) | undefined =
  typeof nodeCrypto?.createHash === 'function' ? (algorithm) => nodeCrypto.createHash!(algorithm) : undefined;

/** Node's one-shot `crypto.hash` (Node >= 20.12): no Hash object per digest, half the cost of `createHash` on a small document. */
const nodeHashOnce: ((data: Uint8Array | string) => string) | undefined =
  typeof nodeCrypto?.hash === 'function'
    ? (data) => nodeCrypto.hash!('sha256', data, 'hex')
    : nodeCreateHash
      ? (data) => nodeCreateHash('sha256').update(data).digest('hex')
      : undefined;

/** SHA-256 of the concatenation of `parts`, incrementally and synchronously (Node); else undefined. */
function sha256HexOfPartsNode(parts: readonly (Uint8Array | string)[]): string | undefined {
  if (!nodeCreateHash) return undefined;
  const hash = nodeCreateHash('sha256');
  for (const p of parts) hash.update(p);
  return hash.digest('hex');
}

/**
 * SHA-256 of `bytes` as lower-case hex when the runtime can hash synchronously (Node), else
 * `undefined` (the caller then awaits {@link sha256Hex}). Saves a promise and a microtask on
 * the writer's hot path.
 */
export function sha256HexSync(bytes: Uint8Array): string | undefined {
  return nodeHashOnce?.(bytes);
}

/** As {@link sha256HexSync}, of `text` taken as UTF-8 (a string without lone surrogates). */
export function sha256HexOfTextSync(text: string): string | undefined {
  return nodeHashOnce?.(text);
}

/**
 * SHA-256 of `data` (bytes, or a string taken as UTF-8) as lower-case hex, through
 * WebCrypto so the same code runs in Node 20, browsers, Deno, Bun and edge runtimes
 * (Node's own hash when available, see above).
 */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  if (typeof data !== 'string') assertBytesArgument(data, 'sha256Hex', 'data');
  if (nodeCreateHash) return nodeCreateHash('sha256').update(data).digest('hex');
  const bytes = typeof data === 'string' ? utf8Encode(data) : data;
  const digest = await subtle().digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return toHex(new Uint8Array(digest));
}

/**
 * SHA-256 of the concatenation of `parts` (bytes, or strings taken as UTF-8), without
 * building the concatenation where the runtime can hash incrementally. Strings must not
 * split a surrogate pair between two parts (savepoint's parts end at ASCII characters).
 */
export async function sha256HexOfParts(parts: readonly (Uint8Array | string)[]): Promise<string> {
  return sha256HexOfPartsNode(parts) ?? sha256Hex(concatBytes(parts.map((p) => (typeof p === 'string' ? utf8Encode(p) : p))));
}

/**
 * SHA-256 of the concatenation of `parts` (strings taken as UTF-8), synchronously, where the
 * runtime hashes incrementally without a worker (Node); undefined elsewhere.
 */
export function sha256HexOfPartsSync(parts: readonly string[]): string | undefined {
  return sha256HexOfPartsNode(parts);
}

/** One buffer holding `parts` in order. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * SHA-256 and UTF-8 length of the concatenation of `pieces`, hashed chunk by chunk as they are
 * encoded (see `utf8Chunks`), synchronously, where the runtime hashes incrementally (Node); else
 * undefined. Neither the joined text nor its bytes are ever built whole.
 */
export function sha256HexAndLengthOfPiecesSync(pieces: readonly string[]): { readonly hex: string; readonly bytes: number } | undefined {
  if (!nodeCreateHash) return undefined;
  const hash = nodeCreateHash('sha256');
  const bytes = utf8Chunks(pieces, (chunk) => hash.update(chunk));
  return { hex: hash.digest('hex'), bytes };
}

/** An incremental SHA-256 (strings taken as UTF-8) where the runtime has one (Node); else undefined. */
export function sha256Incremental(): { update(data: Uint8Array | string): void; hex(): string } | undefined {
  if (!nodeCreateHash) return undefined;
  const hash = nodeCreateHash('sha256');
  return {
    update: (data) => {
      hash.update(data);
    },
    hex: () => hash.digest('hex'),
  };
}
