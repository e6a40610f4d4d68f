import { CheckpointError } from './errors.js';

/**
 * The refusal of a stored value too large to read: `checkpoint_too_large`, naming the key, its
 * size and the limit (and whose limit it is), raised from the size alone, before a byte is read.
 */
export function readTooLarge(key: string, bytes: number, limit: number, whose: string): CheckpointError {
  return new CheckpointError('checkpoint_too_large', `${key} is ${bytes} bytes, over ${whose} of ${limit} bytes: not read`, {
    details: { key, bytes, limit },
  });
}

/** Checks a read limit given as an option: a positive whole number of bytes, or absent. */
export function assertReadLimit(value: unknown, where: string): asserts value is number | undefined {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new CheckpointError('checkpoint_config_invalid', `${where} must be a positive whole number of bytes`, {
      details: { value: typeof value === 'number' ? value : typeof value },
    });
  }
}

/** Checks the options of a `get`: absent, or an object whose `maxBytes` is absent or a positive whole number. */
export function assertGetOptions(options: unknown, where: string): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null)
    throw new CheckpointError('checkpoint_config_invalid', `${where}: options must be an object such as { maxBytes }`);
  assertReadLimit((options as { maxBytes?: unknown }).maxBytes, `${where}: maxBytes`);
}
