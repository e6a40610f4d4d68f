/**
 * `prefix`, then pseudo-random lower-case letters up to `length` characters in all (they
 * compress as little as text does, and no run of one letter cuts differently from other text),
 * the same for the same seed.
 */
export function letters(seed: number, length: number, prefix = ''): string {
  let x = (seed * 2654435761) >>> 0 || 1;
  let text = prefix;
  while (text.length < length) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    text += String.fromCharCode(97 + (x % 26));
  }
  return text;
}
