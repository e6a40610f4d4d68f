import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

describe('public types', () => {
  // Each `@ts-expect-error` in tests/types/*.ts marks a mistake that must not compile; if a
  // change lets one compile, tsc reports the directive as unused (TS2578) and this fails.
  it('reject every mistake marked in tests/types (tsc --noEmit -p tests/types)', async () => {
    const fixtures = readFileSync(new URL('./mistakes.ts', import.meta.url), 'utf8');
    expect(fixtures.match(/@ts-expect-error/g)?.length ?? 0).toBeGreaterThanOrEqual(14);
    const run = await promisify(execFile)(process.execPath, [tsc, '--noEmit', '-p', 'tests/types'], { cwd: root }).then(
      () => ({ code: 0, out: '' }),
      (err: { code?: number; stdout?: string }) => ({ code: err.code ?? 1, out: err.stdout ?? '' }),
    );
    expect(run.out).toBe('');
    expect(run.code).toBe(0);
  }, 180_000);
});
