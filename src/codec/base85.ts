/**
 * Z85 (ZeroMQ's base85) of any length: four bytes in five characters, a last group of one to
 * three bytes in two to four (as Ascii85 ends). Its alphabet has no quote and no backslash, so
 * its text goes into a JSON string as it is, at 5/4 of the bytes where base64 takes 4/3: the
 * form of bytes kept inside an envelope (codec/chunk-edges.ts).
 */
const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
const LOOKUP = new Int8Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;
/** The digit a last group is padded with when read (the largest: the padded value's top bytes are the group's). */
const HIGHEST = 84;
const ascii = new TextDecoder('latin1');

/** Writes the five digits of `value` (a 32-bit unsigned integer) at `out[o]`, most significant first. */
function putGroup(out: Uint8Array, o: number, value: number): void {
  const d4 = value % 85;
  // Below 2^31 from here: integer division.
  let v = (value - d4) / 85;
  for (let d = 3; d >= 1; d--) {
    const q = (v / 85) | 0;
    out[o + d] = CODES[v - q * 85]!;
    v = q;
  }
  out[o] = CODES[v]!;
  out[o + 4] = CODES[d4]!;
}

/** Z85 of `bytes` (see the module's comment for a length not a multiple of four). */
export function toBase85(bytes: Uint8Array): string {
  const n = bytes.length;
  const whole = n - (n % 4);
  const out = new Uint8Array(whole + whole / 4 + 5);
  let o = 0;
  for (let i = 0; i < whole; i += 4, o += 5)
    putGroup(out, o, ((bytes[i]! << 24) | (bytes[i + 1]! << 16) | (bytes[i + 2]! << 8) | bytes[i + 3]!) >>> 0);
  const k = n - whole;
  if (k > 0) {
    let v = 0;
    for (let j = 0; j < 4; j++) v = v * 256 + (j < k ? bytes[whole + j]! : 0);
    putGroup(out, o, v);
    o += k + 1;
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
      const digit = code < 0 ? HIGHEST : code < 256 ? LOOKUP[code]! : -1;
      if (digit < 0) return undefined;
      v = v * 85 + digit;
    }
    if (v > 0xffffffff) return undefined;
    for (let j = 0; j < k - 1; j++) out[o++] = (v >>> (24 - 8 * j)) & 0xff;
  }
  return out;
}
