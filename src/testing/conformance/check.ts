import { isCheckpointError, type CheckpointError } from '../../contract/errors.js';
import { isReasonCode, type ReasonCode } from '../../contract/reason-codes.js';

/**
 * The suite's own assertions, so it runs under any test runner without its `expect`.
 * Messages say what the adapter did and what the contract wants.
 */
export class ConformanceFailure extends Error {
  override readonly name = 'ConformanceFailure';
}

export function fail(message: string): never {
  throw new ConformanceFailure(message);
}

export function ok(condition: unknown, message: string): asserts condition {
  if (!condition) fail(message);
}

const show = (value: unknown): string => {
  if (value instanceof Uint8Array) return `bytes[${value.length}]`;
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

export function equal<T>(actual: T, expected: T, what: string): void {
  if (!Object.is(actual, expected)) fail(`${what}: expected ${show(expected)}, got ${show(actual)}`);
}

export function equalJson(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) fail(`${what}:\n  expected ${e}\n  got      ${a}`);
}

export function sameBytes(actual: Uint8Array | undefined, expected: Uint8Array, what: string): void {
  if (!(actual instanceof Uint8Array)) fail(`${what}: expected ${expected.length} bytes, got ${show(actual)}`);
  if (actual.length !== expected.length) fail(`${what}: expected ${expected.length} bytes, got ${actual.length}`);
  for (let i = 0; i < expected.length; i++) {
    if (actual[i] !== expected[i]) fail(`${what}: byte ${i} is ${actual[i]}, expected ${expected[i]}`);
  }
}

/** A CheckpointError, also when it comes from another copy of savepoint (ESM and CJS side by side). */
export function asCheckpointError(err: unknown): CheckpointError | undefined {
  if (isCheckpointError(err)) return err;
  if (!(err instanceof Error) || err.name !== 'CheckpointError') return undefined;
  return isReasonCode((err as { reasonCode?: unknown }).reasonCode) ? (err as CheckpointError) : undefined;
}

/**
 * Calls `call` and expects a rejection with `code`. A synchronous throw fails too: the
 * contract says every method *rejects*, and callers chain `.catch()` on the promise.
 */
export async function rejects(
  call: () => Promise<unknown> | AsyncIterable<unknown>,
  code: ReasonCode,
  what: string,
): Promise<CheckpointError> {
  let pending: Promise<unknown>;
  try {
    const result = call();
    pending =
      result instanceof Promise
        ? result
        : (async () => {
            for await (const _ of result) {
              // drain
            }
          })();
  } catch (err) {
    fail(`${what}: threw synchronously (${String(err)}) instead of returning a rejected promise`);
  }
  try {
    await pending;
  } catch (err) {
    const ce = asCheckpointError(err);
    if (!ce) fail(`${what}: rejected with ${String(err)}, expected a CheckpointError ${code}`);
    if (ce.reasonCode !== code) fail(`${what}: rejected with ${ce.reasonCode}, expected ${code}`);
    return ce;
  }
  fail(`${what}: resolved, expected a rejection with ${code}`);
}

export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
