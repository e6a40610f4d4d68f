/**
 * Z85 (ZeroMQ's base85) of any length: four bytes in five characters, a last group of one to
 * three bytes in two to four (as Ascii85 ends). Its alphabet has no quote and no backslash, so
 * its text goes into a JSON string as it is, at 5/4 of the bytes where base64 takes 4/3: the
 * form of bytes kept inside an envelope (codec/chunk-edges.ts).
 */
const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
const LOOKUP = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;
/** The digit a last group is padded with when read (the largest: the padded value's top bytes are the group's). */
const HIGHEST = 84;
const ascii = new TextDecoder('latin1');
/** One group's digits, most significant first. */
const digits = new Uint8Array(5);

/** Z85 of `bytes` (see the module's comment for a length not a multiple of four). */
export function toBase85(bytes: Uint8Array): string {
  const n = bytes.length;
  const out = new Uint8Array(Math.ceil((n * 5) / 4));
  let o = 0;
  for (let i = 0; i < n; i += 4) {
    const k = Math.min(4, n - i);
    let v = 0;
    for (let j = 0; j < 4; j++) v = v * 256 + (j < k ? bytes[i + j]! : 0);
    for (let d = 4; d >= 0; d--) {
      digits[d] = v % 85;
      v = Math.floor(v / 85);
    }
    for (let d = 0; d <= k; d++) out[o++] = CODES[digits[d]!]!;
  }
  return ascii.decode(out.subarray(0, o));
}

/** The bytes of Z85 text as {@link toBase85} writes it; undefined when it is not such text. */
export function fromBase85(text: string): Uint8Array | undefined {
  const n = text.length;
  if (n % 5 === 1) return undefined;
  const out = new Uint8Array(Math.floor(n / 5) * 4 + Math.max(0, (n % 5) - 1));
  let o = 0;
  for (let i = 0; i < n; i += 5) {
    const k = Math.min(5, n - i);
    let v = 0;
    for (let d = 0; d < 5; d++) {
      const code = d < k ? text.charCodeAt(i + d) : -1;
      const digit = d < k ? (code < 128 ? LOOKUP[code]! : -1) : HIGHEST;
      if (digit < 0) return undefined;
      v = v * 85 + digit;
    }
    if (v > 0xffffffff) return undefined;
    for (let j = 0; j < k - 1; j++) out[o++] = Math.floor(v / 2 ** (24 - 8 * j)) & 0xff;
  }
  return out;
}
