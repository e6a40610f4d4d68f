import { gzipSync, Inflate } from 'fflate';
import { assertBytesArgument, assertOptionsArgument } from '../contract/arguments.js';
import { CheckpointError } from '../contract/errors.js';

let crcTable: Uint32Array | undefined;

function table(): Uint32Array {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  return crcTable;
}

/** Feeds `bytes` into a running CRC-32 state (start with 0xffffffff, finish with `^ 0xffffffff`). */
function crcUpdate(state: number, bytes: Uint8Array): number {
  const t = table();
  let crc = state;
  for (const b of bytes) crc = t[(crc ^ b) & 0xff]! ^ (crc >>> 8);
  return crc;
}

/** CRC-32 (IEEE) as gzip stores it in its trailer. */
export function crc32(bytes: Uint8Array): number {
  assertBytesArgument(bytes, 'crc32');
  return (crcUpdate(0xffffffff, bytes) ^ 0xffffffff) >>> 0;
}

/** True when `bytes` start with the gzip magic number. */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes instanceof Uint8Array && bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * Gzips `bytes`. The header's mtime is fixed at 0, so the same input always gives the
 * same output (stable checksums, no spurious diffs in git-backed stores).
 */
export function gzip(bytes: Uint8Array, level: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 = 6): Uint8Array {
  assertBytesArgument(bytes, 'gzip');
  return gzipSync(bytes, { level, mtime: 0 });
}

/** Length of a gzip member header (RFC 1952 §2.3), or -1 when it runs past the data. */
function headerLength(bytes: Uint8Array): number {
  const flags = bytes[3]!;
  let at = 10;
  if (flags & 0x04) {
    if (at + 2 > bytes.length) return -1;
    at += 2 + (bytes[at]! | (bytes[at + 1]! << 8)); // FEXTRA
  }
  for (const flag of [0x08, 0x10]) {
    // FNAME, FCOMMENT: zero-terminated
    if (flags & flag) {
      while (at < bytes.length && bytes[at] !== 0) at++;
      at++;
    }
  }
  if (flags & 0x02) at += 2; // FHCRC
  return at <= bytes.length ? at : -1;
}

/**
 * The decompressed size {@link gunzip} accepts when no `maxBytes` is given: 10 MiB, the
 * default `maxSnapshotBytes` of every built-in profile.
 */
export const DEFAULT_GUNZIP_MAX_BYTES = 10 * 1024 * 1024;

/** Options of {@link gunzip}. */
export interface GunzipOptions {
  /**
   * Largest decompressed size accepted, in bytes. Decompression stops as soon as the
   * output passes it (`checkpoint_too_large`), so a small hostile file (a "zip bomb":
   * deflate expands up to ~1032:1) costs at most this much memory and the time to make it.
   * Readers pass the profile's `maxSnapshotBytes`.
   * @default DEFAULT_GUNZIP_MAX_BYTES (10 MiB)
   */
  readonly maxBytes?: number;
}

/**
 * Compressed input fed to the inflater per step. Deflate expands at most ~1032:1, so one
 * step makes at most ~17 MB of output before the size bound is checked again; smaller
 * steps cost time on every ordinary file.
 */
const INPUT_STEP = 16_384;

/**
 * Gunzips `bytes` and checks the gzip trailer (CRC-32 and length of the original data),
 * which fflate alone does not. A truncated or altered archive is
 * `checkpoint_integrity_mismatch`: that trailer is the compressed artifact's checksum.
 * Output over `options.maxBytes` is `checkpoint_too_large`: the inflater is fed in small
 * steps and stopped as soon as its output passes the bound (the trailer's length field is
 * not trusted for that: a truncated file's last four bytes say anything).
 *
 * The header is parsed here and the deflate body inflated as a stream: fflate's
 * gunzipSync preallocates its output from the trailer's length field, so a truncated
 * file would make it allocate whatever its last four bytes say (up to 4 GB).
 *
 * @example
 * ```ts
 * const plain = gunzip(stored, key, { maxBytes: profile.maxSnapshotBytes });
 * ```
 */
export function gunzip(bytes: Uint8Array, where = 'compressed document', options: GunzipOptions = {}): Uint8Array {
  assertOptionsArgument(options, 'gunzip');
  const maxBytes = options.maxBytes ?? DEFAULT_GUNZIP_MAX_BYTES;
  assertBytesArgument(bytes, 'gunzip');
  if (typeof maxBytes !== 'number' || !(maxBytes >= 0)) {
    throw new CheckpointError('checkpoint_config_invalid', 'gunzip: maxBytes must be a non-negative number', {
      details: { maxBytes: String(maxBytes) },
    });
  }
  const start = isGzip(bytes) && bytes.length >= 18 && bytes[2] === 8 ? headerLength(bytes) : -1;
  if (start < 0 || start + 8 > bytes.length) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where} is not a complete gzip stream`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const storedCrc = view.getUint32(bytes.length - 8, true);
  const storedSize = view.getUint32(bytes.length - 4, true);
  // The trailer's length is not trusted (a truncated file's last bytes say anything): the output is counted.
  const tooLarge = (): CheckpointError =>
    new CheckpointError('checkpoint_too_large', `${where} decompresses to more than ${maxBytes} bytes, the limit`, {
      details: { limit: maxBytes },
    });

  const chunks: Uint8Array[] = [];
  let total = 0;
  let crc = 0xffffffff;
  const inflater = new Inflate((chunk) => {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge();
    crc = crcUpdate(crc, chunk);
    chunks.push(chunk);
  });
  const body = bytes.subarray(start, bytes.length - 8);
  try {
    let at = 0;
    do {
      const end = Math.min(body.length, at + INPUT_STEP);
      inflater.push(body.subarray(at, end), end >= body.length);
      at = end;
    } while (at < body.length);
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where} cannot be decompressed`, { cause: err });
  }
  if (storedSize !== total % 2 ** 32 || storedCrc !== (crc ^ 0xffffffff) >>> 0) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where} fails its gzip CRC-32/length check`);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}
