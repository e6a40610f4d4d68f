/**
 * Prose-like text of about `size` characters from a seed: not periodic (content-defined chunk
 * boundaries fall as they would in a conversation), the same for the same seed. `words` may add
 * characters a test needs (non-ASCII, quotes).
 */
export function prose(seed: number, size: number, words = PROSE_WORDS): string {
  let x = seed | 1;
  let t = '';
  while (t.length < size) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    t += `${words[(x >>> 0) % words.length]} ${(x >>> 8) % 1000} `;
  }
  return t;
}

export const PROSE_WORDS: readonly string[] = ['agent', 'tool', 'result', 'and', 'then', 'wrote', 'a', 'long', 'answer'];
