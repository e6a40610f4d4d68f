/**
 * Base64 and text checks without Node's Buffer, so the GitHub adapter runs in browsers
 * and edge runtimes too.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const LOOKUP = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;

const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
const ascii = new TextDecoder('latin1');

/** Standard base64 (with padding) of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  const n = bytes.length;
  // Write ASCII codes into a buffer and decode once: building the string piecewise is
  // an order of magnitude slower for megabyte files.
  const out = new Uint8Array(Math.ceil(n / 3) * 4);
  let o = 0;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = CODES[v >> 18]!;
    out[o++] = CODES[(v >> 12) & 63]!;
    out[o++] = CODES[(v >> 6) & 63]!;
    out[o++] = CODES[v & 63]!;
  }
  if (i < n) {
    const v = (bytes[i]! << 16) | ((i + 1 < n ? bytes[i + 1]! : 0) << 8);
    out[o++] = CODES[v >> 18]!;
    out[o++] = CODES[(v >> 12) & 63]!;
    out[o] = i + 1 < n ? CODES[(v >> 6) & 63]! : 61; // '='
    out[o + 1] = 61;
  }
  return ascii.decode(out);
}

/**
 * Decodes base64, ignoring whitespace (GitHub wraps the base64 it sends at 60
 * characters). Returns `undefined` for text that is not base64.
 */
export function fromBase64(text: string): Uint8Array | undefined {
  const clean = text.replace(/[\s]/g, '');
  if (clean.length % 4 === 1) return undefined;
  const pad = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  const body = clean.length - pad;
  const out = new Uint8Array(Math.floor((body * 3) / 4));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < body; i++) {
    const c = clean.charCodeAt(i);
    const v = c < 128 ? LOOKUP[c]! : -1;
    if (v < 0) return undefined;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return o === out.length ? out : out.subarray(0, o);
}

const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The bytes as a string when they are valid UTF-8 (BOM kept), so they can be sent as a
 * tree entry's inline `content` and stored byte for byte; `undefined` for binary data
 * (gzip), which must go through a base64 blob instead.
 */
export function asUtf8Text(bytes: Uint8Array): string | undefined {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    return undefined;
  }
}
