/**
 * Text helpers both Markdown profiles use to read documents other tools wrote and to carry
 * what those tools wrote into savepoint's next rewrite unchanged. No YAML here, so the
 * progress-protocol subpath can use it without the `yaml` peer.
 */
import { splitSections } from './markdown.js';

export { liberalUtc } from '../foreign-json.js';

/** One section of a document as its writer wrote it: the key of its heading and its raw lines (heading included). */
export interface RawSection {
  readonly key: string;
  /** Index of its heading line in the lines given. */
  readonly line: number;
  readonly text: string;
}

/**
 * The sections of a document body (`lines`, line endings already `\n`: headings of level
 * `minLevel`..`maxLevel` outside code fences) with their lines exactly as written
 * (trailing blank lines left out), so another tool's section can be written back byte for byte.
 */
export function rawSections(lines: readonly string[], maxLevel: number, minLevel: number): RawSection[] {
  const { sections } = splitSections(lines, maxLevel, minLevel);
  return sections.map((s) => {
    const body = [...s.lines];
    while (body.length > 0 && body[body.length - 1]!.trim() === '') body.pop();
    return { key: s.key, line: s.line, text: [lines[s.line]!, ...body].join('\n') };
  });
}

/** Base64url (no padding) of a lower-case hex string: 43 characters for a SHA-256. */
export function base64urlOfHex(hex: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let bits = 0;
  let value = 0;
  let out = '';
  for (let i = 0; i < hex.length; i += 2) {
    value = (value << 8) | parseInt(hex.slice(i, i + 2), 16);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(value >> bits) & 63];
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += alphabet[(value << (6 - bits)) & 63];
  return out;
}
