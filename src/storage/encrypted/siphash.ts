/**
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed pseudorandom function of 64 bits, made
 * for short inputs, here in plain JavaScript on 32-bit halves. It tags storage key names for
 * shared values (`name-tag.ts`): a native hash call costs more than the whole of this on a
 * 70-byte key name, and a keyed 64-bit PRF is what the tag needs (nobody without the key can
 * compute one, so finding another name with a given tag takes 2^64 tries against the store).
 * Known-answer tests hold it to the reference vectors.
 */

const le32 = (b: Uint8Array, i: number): number => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;

/** Half of the last message word: the bytes after `whole` from `from` (0 or 4), little-endian (the length byte goes on top). */
function lastWordHalf(message: Uint8Array, whole: number, from: number): number {
  let half = 0;
  for (let i = whole + from; i < message.length && i < whole + from + 4; i++) half |= message[i]! << (8 * (i - whole - from));
  return half;
}

/** SipHash-2-4 of `message` under the 16-byte `key`, as 8 bytes (little-endian, as the reference writes it). */
export function sipHash24(key: Uint8Array, message: Uint8Array): Uint8Array {
  if (key.length !== 16) throw new RangeError('sipHash24: the key must be 16 bytes');
  const k0l = le32(key, 0);
  const k0h = le32(key, 4);
  const k1l = le32(key, 8);
  const k1h = le32(key, 12);
  // v0..v3 as 32-bit halves in locals (the rounds below are the reference's, written out on
  // halves): "somepseudorandomlygeneratedbytes" are the reference's initial constants.
  let v0l = k0l ^ 0x70736575;
  let v0h = k0h ^ 0x736f6d65;
  let v1l = k1l ^ 0x6e646f6d;
  let v1h = k1h ^ 0x646f7261;
  let v2l = k0l ^ 0x6e657261;
  let v2h = k0h ^ 0x6c796765;
  let v3l = k1l ^ 0x79746573;
  let v3h = k1h ^ 0x74656462;
  const n = message.length;
  const whole = n - (n % 8);
  const lastLo = lastWordHalf(message, whole, 0);
  const lastHi = lastWordHalf(message, whole, 4) | ((n & 0xff) << 24);
  // Each message word is absorbed with two rounds; one more pass of four rounds finalizes.
  for (let at = 0; at <= whole + 8; at += 8) {
    const final = at > whole;
    const ml = final ? 0 : at < whole ? le32(message, at) : lastLo;
    const mh = final ? 0 : at < whole ? le32(message, at + 4) : lastHi;
    if (final) v2l ^= 0xff;
    else {
      v3l ^= ml;
      v3h ^= mh;
    }
    for (let r = final ? 4 : 2; r > 0; r--) {
      let sum = (v0l >>> 0) + (v1l >>> 0);
      v0h = (v0h + v1h + (sum > 0xffffffff ? 1 : 0)) | 0;
      v0l = sum | 0;
      let t = v1h;
      v1h = (v1h << 13) | (v1l >>> 19);
      v1l = (v1l << 13) | (t >>> 19);
      v1l ^= v0l;
      v1h ^= v0h;
      t = v0l;
      v0l = v0h;
      v0h = t;
      sum = (v2l >>> 0) + (v3l >>> 0);
      v2h = (v2h + v3h + (sum > 0xffffffff ? 1 : 0)) | 0;
      v2l = sum | 0;
      t = v3h;
      v3h = (v3h << 16) | (v3l >>> 16);
      v3l = (v3l << 16) | (t >>> 16);
      v3l ^= v2l;
      v3h ^= v2h;
      sum = (v0l >>> 0) + (v3l >>> 0);
      v0h = (v0h + v3h + (sum > 0xffffffff ? 1 : 0)) | 0;
      v0l = sum | 0;
      t = v3h;
      v3h = (v3h << 21) | (v3l >>> 11);
      v3l = (v3l << 21) | (t >>> 11);
      v3l ^= v0l;
      v3h ^= v0h;
      sum = (v2l >>> 0) + (v1l >>> 0);
      v2h = (v2h + v1h + (sum > 0xffffffff ? 1 : 0)) | 0;
      v2l = sum | 0;
      t = v1h;
      v1h = (v1h << 17) | (v1l >>> 15);
      v1l = (v1l << 17) | (t >>> 15);
      v1l ^= v2l;
      v1h ^= v2h;
      t = v2l;
      v2l = v2h;
      v2h = t;
    }
    if (!final) {
      v0l ^= ml;
      v0h ^= mh;
    }
  }
  const lo = v0l ^ v1l ^ v2l ^ v3l;
  const hi = v0h ^ v1h ^ v2h ^ v3h;
  return Uint8Array.of(lo, lo >>> 8, lo >>> 16, lo >>> 24, hi, hi >>> 8, hi >>> 16, hi >>> 24);
}
