/**
 * Keys are stored as their UTF-16 code units, big-endian, in a `bytea` primary key. PostgreSQL
 * compares `bytea` bytewise, and big-endian code units compare exactly like the code units
 * themselves, so the index order is the contract's listing order. A `text` column under
 * `COLLATE "C"` would sort by UTF-8 bytes instead, which puts U+E000–U+FFFF after characters
 * above U+FFFF (UTF-16 puts them before: surrogates are 0xD800–0xDFFF).
 */

/** The stored form of `key`: its UTF-16 code units, big-endian. Lossless (lone surrogates too). */
export function orderKey(key: string): Buffer {
  // Node's utf16le encoder copies code units as they are; swap16 makes them big-endian.
  return Buffer.from(key, 'utf16le').swap16();
}

/** The key stored as `bytes` by {@link orderKey}. */
export function keyOf(bytes: Uint8Array): string {
  const copy = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Buffer.from(copy).swap16().toString('utf16le');
}

/**
 * The keys packed in `packed` after `prefix`: each the stored form of what follows the prefix,
 * as a 4-byte big-endian length in bytes then those bytes (linked-read-sql.ts's packedKeys).
 * One copy of the whole value is made little-endian, where each key would be copied twice.
 */
export function packedKeysOf(prefix: string, packed: Uint8Array): string[] {
  // swap16 swaps each length's two halves too: its bytes b0 b1 b2 b3 read as b1 b0 b3 b2.
  const le = Buffer.from(packed).swap16();
  const keys: string[] = [];
  let at = 0;
  while (at < le.length) {
    const length = le[at + 1]! * 0x1000000 + le[at]! * 0x10000 + le[at + 3]! * 0x100 + le[at + 2]!;
    at += 4;
    if (at + length > le.length) throw new RangeError('packed keys: a length runs past the value');
    keys.push(prefix + le.toString('utf16le', at, at + length));
    at += length;
  }
  return keys;
}

/**
 * The bounds of "every key that starts with `prefix`" as a range on the stored form:
 * `lower <= key_order < upper` (no upper bound when the prefix is all 0xFF bytes, which no
 * valid key reaches). A range is what an index serves, and it treats `%`, `_` and every
 * other character literally, unlike `LIKE`.
 */
export function prefixRange(prefix: string): { lower: Buffer; upper: Buffer | undefined } {
  const lower = orderKey(prefix);
  const upper = Buffer.from(lower);
  let end = upper.length;
  while (end > 0 && upper[end - 1] === 0xff) end--;
  if (end === 0) return { lower, upper: undefined };
  upper[end - 1] = upper[end - 1]! + 1;
  return { lower, upper: upper.subarray(0, end) };
}
