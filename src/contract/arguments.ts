import { CheckpointError } from './errors.js';

/**
 * Argument checks for public entries, so a caller's mistake (a missing profile, a storage
 * that is not one, a string where bytes belong) is a `checkpoint_config_invalid` naming
 * the entry and the argument — never a raw `TypeError` from deep inside. They check shape
 * only, cheaply; the values themselves are checked where they are used. Messages never
 * echo the value, which may come from untrusted input.
 */

const invalid = (fn: string, what: string): CheckpointError =>
  new CheckpointError('checkpoint_config_invalid', `${fn}: ${what}`, { details: { function: fn } });

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const hasFunctions = (value: Record<string, unknown>, names: readonly string[]): boolean =>
  names.every((n) => typeof value[n] === 'function');

/** Throws unless `value` is an options object. */
export function assertOptionsArgument(value: unknown, fn: string): asserts value is object {
  if (!isObject(value) || Array.isArray(value)) throw invalid(fn, 'expects an options object');
}

/** Throws unless `value` looks like a StorageAdapter (get, put, delete, list). */
export function assertStorageArgument(value: unknown, fn: string, name = 'storage'): void {
  if (!isObject(value) || !hasFunctions(value, ['get', 'put', 'delete', 'list']))
    throw invalid(fn, `${name} must be a StorageAdapter (get, put, delete, list)`);
}

/** Throws unless `value` looks like a profile made by defineProfile (layout, document, statuses, assertRunId). */
export function assertProfileArgument(value: unknown, fn: string): void {
  const ok =
    isObject(value) &&
    typeof value.name === 'string' &&
    isObject(value.layout) &&
    hasFunctions(value.layout, ['latestKey', 'classify', 'lockKey']) &&
    typeof value.layout.runsPrefix === 'string' &&
    isObject(value.document) &&
    hasFunctions(value.document, ['encode', 'decode']) &&
    isObject(value.statuses) &&
    hasFunctions(value, ['assertRunId', 'isTerminal']);
  if (!ok) throw invalid(fn, 'profile must be a profile made by defineProfile (or a built-in one)');
}

/** Throws unless `value` is a Uint8Array. */
export function assertBytesArgument(value: unknown, fn: string, name = 'bytes'): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalid(fn, `${name} must be a Uint8Array`);
}

/** Throws unless `value` is a string. */
export function assertStringArgument(value: unknown, fn: string, name: string): asserts value is string {
  if (typeof value !== 'string') throw invalid(fn, `${name} must be a string`);
}

/** The common head of `(options: { storage, profile, … })` entries. */
export function assertStorageProfileOptions(options: unknown, fn: string): void {
  assertOptionsArgument(options, fn);
  const { storage, profile } = options as { storage?: unknown; profile?: unknown };
  assertStorageArgument(storage, fn);
  assertProfileArgument(profile, fn);
}

/** Throws unless `value` is undefined or an options object (for optional trailing options). */
export function assertOptionalOptionsArgument(value: unknown, fn: string): asserts value is object | undefined {
  if (value !== undefined) assertOptionsArgument(value, fn);
}

/** Throws unless `value` is a non-null object (a document, a plan, a report); its fields are checked where read. */
export function assertObjectArgument(value: unknown, fn: string, name: string): asserts value is object {
  if (!isObject(value) || Array.isArray(value)) throw invalid(fn, `${name} must be an object`);
}

/** Throws unless `value` is an array. */
export function assertArrayArgument(value: unknown, fn: string, name: string): asserts value is readonly unknown[] {
  if (!Array.isArray(value)) throw invalid(fn, `${name} must be an array`);
}

/** Throws unless `value` is a function. */
export function assertFunctionArgument(value: unknown, fn: string, name: string): asserts value is (...args: never[]) => unknown {
  if (typeof value !== 'function') throw invalid(fn, `${name} must be a function`);
}

/** Throws unless `value` is a Date holding a valid time. */
export function assertDateArgument(value: unknown, fn: string, name: string): asserts value is Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw invalid(fn, `${name} must be a valid Date`);
}

/** Throws unless `value` is a time in milliseconds a Date can hold (finite, within ±8.64e15). */
export function assertTimeMsArgument(value: unknown, fn: string, name: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) > 8.64e15)
    throw invalid(fn, `${name} must be a time in milliseconds`);
}

/**
 * Throws `checkpoint_schema_invalid` unless `schema` (a zod schema, or anything with
 * `safeParse`) accepts `value`: for helpers that take a whole document, where a shape check
 * of the top level would leave nested fields to fail as raw TypeErrors.
 */
export function assertSchemaArgument(
  schema: { safeParse(value: unknown): { success: boolean } },
  value: unknown,
  fn: string,
  name: string,
): void {
  if (!schema.safeParse(value).success)
    throw new CheckpointError('checkpoint_schema_invalid', `${fn}: ${name} does not match its schema`, { details: { function: fn } });
}
