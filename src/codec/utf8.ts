import { CheckpointError } from '../model/errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** UTF-8 bytes of `text`. */
export function utf8Encode(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Decodes UTF-8, refusing malformed bytes with `checkpoint_schema_invalid` instead of inserting U+FFFD. */
export function utf8Decode(bytes: Uint8Array, where = 'document'): string {
  try {
    return decoder.decode(bytes);
  } catch (err) {
    throw new CheckpointError('checkpoint_schema_invalid', `${where} is not valid UTF-8`, { cause: err });
  }
}
