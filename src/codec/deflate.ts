import { deflateSync, type DeflateOptions } from 'fflate';

/** A deflate level, 0 (stored) to 9. */
export type DeflateLevel = NonNullable<DeflateOptions['level']>;

/** A raw deflate (RFC 1951, no header nor trailer) at `level`, with `dictionary` as preset dictionary when given. */
export type RawDeflate = (bytes: Uint8Array, level: DeflateLevel, dictionary?: Uint8Array) => Uint8Array;

/** What savepoint uses of `node:zlib`. */
interface NodeZlib {
  deflateRawSync?: (bytes: Uint8Array, options: { level: number; dictionary?: Uint8Array }) => Uint8Array;
}

/**
 * `node:zlib` when the runtime offers it without an import (`process.getBuiltinModule`, Node
 * >= 20.16), so the root entry imports no `node:` module; undefined in browsers, Deno, Bun and
 * edge runtimes, which deflate with fflate. Looked up at the first deflate, not at import:
 * loading zlib takes a few milliseconds a program that never deflates would pay.
 */
function lookUpZlib(): NodeZlib | undefined {
  try {
    const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    return proc?.getBuiltinModule?.('node:zlib') as NodeZlib | undefined;
  } catch {
    return undefined;
  }
}

/** `node:zlib` once looked up (null: the runtime has none). */
let nodeZlib: NodeZlib | null | undefined;

/** fflate's deflate: JavaScript, everywhere. It allocates its tables on every call (tens of µs for a small input). */
export const fflateDeflateRaw: RawDeflate = (bytes, level, dictionary) =>
  deflateSync(bytes, dictionary ? { level, dictionary } : { level });

/**
 * Node's zlib (native) where the runtime has it, else undefined: about a third of fflate's CPU on
 * a 2 KB leaf or a 300-byte edges member with its dictionary. Its `deflateRawSync` is read at
 * each call (not kept), so a test can watch it.
 */
export function zlibDeflateRaw(): RawDeflate | undefined {
  nodeZlib ??= lookUpZlib() ?? null;
  const zlib = nodeZlib;
  if (typeof zlib?.deflateRawSync !== 'function') return undefined;
  return (bytes, level, dictionary) => zlib.deflateRawSync!(bytes, dictionary ? { level, dictionary } : { level });
}

/** The deflate {@link deflateRaw} uses, chosen at its first call. */
let chosen: RawDeflate | undefined;

/**
 * A raw deflate stream of `bytes`: Node's zlib where the runtime has it, else fflate. Their
 * streams differ byte for byte (both are standard deflate that either inflater reads), so what
 * a deflated stream is must never name content: a chunk's id is the hash of its content, and
 * an envelope's edges are covered by the document's seal over the inflated bytes.
 */
export function deflateRaw(bytes: Uint8Array, level: DeflateLevel, dictionary?: Uint8Array): Uint8Array {
  chosen ??= zlibDeflateRaw() ?? fflateDeflateRaw;
  return chosen(bytes, level, dictionary);
}
