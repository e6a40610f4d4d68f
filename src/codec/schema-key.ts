import { canonicalJson } from './canonical-json.js';

/**
 * A content key for a JSON Schema: two 32-bit string hashes (cyrb53-style mixing) of its
 * canonical JSON plus its length. Schemas are looked up in the table of validators
 * generated at build time by this key, so the same schema object, or an equal one built
 * elsewhere, finds its precompiled validator.
 */
export function schemaKey(schema: unknown): string {
  const text = canonicalJson(schema);
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `${(h1 >>> 0).toString(16).padStart(8, '0')}${(h2 >>> 0).toString(16).padStart(8, '0')}-${text.length}`;
}
