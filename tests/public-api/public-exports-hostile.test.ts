import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError, REASON_CODES } from 'savepoint';

// Argument validation made systematic: EVERY exported function and class of every public entry
// (the root `savepoint` and each `savepoint/<sub>`, found by listing src/entries/, so a new
// export or a new entry is covered without editing this test) is called with hostile
// arguments. Each call must return (or resolve), or throw (or reject) a CheckpointError with
// a known reason code — never a raw TypeError, ReferenceError or RangeError from deep inside.
//
// The one other error a call may let through is the hostile Proxy's own: when the caller's
// object throws from a property read, that is the caller's error and is passed on unchanged
// (wrapping it would hide the caller's stack); what must not happen is savepoint tripping
// over its own code.

class HostileError extends Error {
  override readonly name = 'HostileError';
}

const hostileProxy = new Proxy(
  {},
  {
    get: () => {
      throw new HostileError('hostile get');
    },
    has: () => {
      throw new HostileError('hostile has');
    },
    ownKeys: () => {
      throw new HostileError('hostile ownKeys');
    },
    getPrototypeOf: () => {
      throw new HostileError('hostile getPrototypeOf');
    },
    getOwnPropertyDescriptor: () => {
      throw new HostileError('hostile getOwnPropertyDescriptor');
    },
  },
);

const HOSTILE: readonly [string, unknown][] = [
  ['undefined', undefined],
  ['null', null],
  ['42', 42],
  ["'x'", 'x'],
  ['{}', {}],
  ['[]', []],
  ['a throwing Proxy', hostileProxy],
  ['an object with a __proto__ key', JSON.parse('{"__proto__":{"polluted":true},"storage":1,"profile":1}') as unknown],
];

const entriesDir = fileURLToPath(new URL('../../src/entries/', import.meta.url));
const ENTRY_NAMES = [
  'savepoint',
  ...readdirSync(entriesDir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `savepoint/${f.slice(0, -3)}`),
];

async function load(entry: string): Promise<Record<string, unknown>> {
  const path = entry === 'savepoint' ? '../../src/index.ts' : `../../src/entries/${entry.slice('savepoint/'.length)}.ts`;
  return (await import(/* @vite-ignore */ path)) as Record<string, unknown>;
}

const isClass = (fn: (...args: never[]) => unknown): boolean => /^class[\s{]/.test(Function.prototype.toString.call(fn));

/** How long an async call may stay pending before it counts as "did not fail" (sleep(42) resolves well before). */
const SETTLE_MS = 2_000;

/** 'ok', 'checkpoint_*', 'hostile', or 'raw <name>: <message>' for anything else. */
async function outcome(call: () => unknown): Promise<string> {
  try {
    const result = call();
    if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const pending = new Promise<'pending'>((resolve) => {
        timer = setTimeout(() => resolve('pending'), SETTLE_MS);
      });
      try {
        await Promise.race([result as Promise<unknown>, pending]);
      } finally {
        clearTimeout(timer);
      }
    }
    return 'ok';
  } catch (err) {
    if (err instanceof HostileError) return 'hostile';
    if (isCheckpointError(err))
      return (REASON_CODES as readonly string[]).includes(err.reasonCode) ? err.reasonCode : `raw CheckpointError with unknown code`;
    return `raw ${err instanceof Error ? `${err.name}: ${err.message}` : typeof err}`;
  }
}

describe('every exported function and class answers hostile arguments with a CheckpointError', () => {
  // Helpers taking a path or defaulting to the working directory (writeFileAtomic('x', 'x'),
  // the progress protocol's git steps) act on the cwd: run them in an empty scratch directory.
  const home = process.cwd();
  let scratch = '';
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'savepoint-hostile-'));
    process.chdir(scratch);
  });
  afterAll(() => {
    process.chdir(home);
    rmSync(scratch, { recursive: true, force: true });
  });

  it('finds the entries', () => {
    expect(ENTRY_NAMES.length).toBeGreaterThan(8);
  });

  for (const entry of ENTRY_NAMES) {
    it(`${entry}: every export, every hostile argument, alone and as every argument`, async () => {
      const mod = await load(entry);
      const failures: string[] = [];
      let callables = 0;
      for (const [name, value] of Object.entries(mod)) {
        if (typeof value !== 'function') continue;
        callables += 1;
        const fn = value as (...args: unknown[]) => unknown;
        const invoke = isClass(fn)
          ? (args: unknown[]) => Reflect.construct(fn, args)
          : (args: unknown[]) => Reflect.apply(fn, undefined, args);
        for (const [what, arg] of HOSTILE) {
          for (const args of [[arg], [arg, arg, arg]]) {
            const result = await outcome(() => invoke(args));
            if (result.startsWith('raw ')) failures.push(`${name}(${args.map(() => what).join(', ')}) → ${result}`);
          }
        }
      }
      expect(callables, `${entry} exports something callable`).toBeGreaterThan(0);
      expect(failures).toEqual([]);
    });
  }
});
