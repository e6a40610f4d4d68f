import { gzipSync, inflateSync } from 'fflate';
import { CheckpointError } from '../model/errors.js';

let crcTable: Uint32Array | undefined;

/** CRC-32 (IEEE) as gzip stores it in its trailer. */
export function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const b of bytes) crc = crcTable[(crc ^ b) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** True when `bytes` start with the gzip magic number. */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * Gzips `bytes`. The header's mtime is fixed at 0, so the same input always gives the
 * same output (stable checksums, no spurious diffs in git-backed stores).
 */
export function gzip(bytes: Uint8Array, level: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 = 6): Uint8Array {
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
 * Gunzips `bytes` and checks the gzip trailer (CRC-32 and length of the original data),
 * which fflate alone does not. A truncated or altered archive is
 * `checkpoint_integrity_mismatch`: that trailer is the compressed artifact's checksum.
 *
 * The header is parsed here and the deflate body inflated without a size hint: fflate's
 * gunzipSync preallocates its output from the trailer's length field, so a truncated
 * file would make it allocate whatever its last four bytes say (up to 4 GB).
 */
export function gunzip(bytes: Uint8Array, where = 'compressed document'): Uint8Array {
  const start = isGzip(bytes) && bytes.length >= 18 && bytes[2] === 8 ? headerLength(bytes) : -1;
  if (start < 0 || start + 8 > bytes.length) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where} is not a complete gzip stream`);
  }
  let out: Uint8Array;
  try {
    out = inflateSync(bytes.subarray(start, bytes.length - 8));
  } catch (err) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where} cannot be decompressed`, { cause: err });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const storedCrc = view.getUint32(bytes.length - 8, true);
  const storedSize = view.getUint32(bytes.length - 4, true);
  if (storedSize !== out.length % 2 ** 32 || storedCrc !== crc32(out)) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where} fails its gzip CRC-32/length check`);
  }
  return out;
}
