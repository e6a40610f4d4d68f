/**
 * `savepoint unlock RUN [--force]` against a real writer process holding the run on the
 * real file system: refused while the holder lives (exit 3, what is known about it), forced
 * (the holder's next write fails with checkpoint_run_locked, never acknowledged), and free
 * once the holder was SIGKILLed (a process of this host that is gone holds nothing).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundledChildPerFile } from '../support/bundle-child.js';
import { runCliCaptured } from '../support/cli-io.js';
import { startJsonChild as startChild } from '../support/line-child.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bundled = bundledChildPerFile(join(root, 'tests/fixtures/writer/lease-child.ts'), 'savepoint-unlock-');

const ajv = new (Ajv2020 as unknown as typeof import('ajv').default)({ strict: false });
const validateUnlock = ajv.compile(JSON.parse(readFileSync(join(root, 'schemas/cli/unlock.v1.json'), 'utf8')));
const validateError = ajv.compile(JSON.parse(readFileSync(join(root, 'schemas/cli/error.v1.json'), 'utf8')));
function valid(validate: typeof validateUnlock, text: string): void {
  validate(JSON.parse(text));
  expect(validate.errors ?? []).toEqual([]);
}

const cli = (args: string[]) => runCliCaptured(args);

describe('savepoint unlock', () => {
  it('refuses a live holder, removes it with --force (its next write is refused), and frees a SIGKILLed holder without --force', async () => {
    const dir = join(bundled.work, 'store');
    const runId = 'held';
    const child = startChild(bundled.bundle, ['taker', dir, runId, '60000']);
    try {
      expect(await child.waitFor((l) => l.type === 'ready', 20_000)).toBeDefined();
      child.child.stdin!.write('cp\n');
      expect(await child.waitFor((l) => l.type === 'ack', 20_000)).toMatchObject({ sequence: 1 });

      const refused = await cli(['unlock', runId, '--dir', dir]);
      expect(refused.code).toBe(3);
      expect(refused.err).toMatch(new RegExp(`held by pid ${child.child.pid} on this host \\(.*process running\\), lease ends in`));
      expect(refused.err).toMatch(/--force/);
      const refusedJson = await cli(['unlock', runId, '--dir', dir, '--json']);
      expect(refusedJson.code).toBe(3);
      valid(validateError, refusedJson.err);
      expect(JSON.parse(refusedJson.err)).toMatchObject({ schemaVersion: 1, error: { reasonCode: 'checkpoint_run_locked', exitCode: 3 } });

      const forced = await cli(['unlock', runId, '--dir', dir, '--force', '--json']);
      expect(forced.code).toBe(0);
      valid(validateUnlock, forced.out);
      expect(JSON.parse(forced.out)).toMatchObject({
        schemaVersion: 1,
        runId,
        removed: true,
        forced: true,
        lock: { pid: child.child.pid, live: true },
      });
      // The holder's next checkpoint is fenced out: refused, never acknowledged.
      const results = (): typeof child.lines => child.lines.filter((l) => l.type === 'ack' || l.type === 'fail');
      child.child.stdin!.write('cp\n');
      await child.waitFor(() => results().length >= 2, 20_000);
      expect(results()[1]).toMatchObject({ type: 'fail', reason: 'checkpoint_run_locked' });
      // It takes the run again on the one after (nobody else did).
      child.child.stdin!.write('cp\n');
      await child.waitFor(() => results().length >= 3, 20_000);
      expect(results()[2]).toMatchObject({ type: 'ack' });

      child.child.kill('SIGKILL');
      await child.exited;
      const freed = await cli(['unlock', runId, '--dir', dir]);
      expect(freed.code).toBe(0);
      expect(freed.out).toMatch(/removed the lock of run held: pid \d+ on this host \(.*no such process\)/);
      expect((await cli(['unlock', runId, '--dir', dir])).out).toMatch(/is not locked/);
      valid(validateUnlock, (await cli(['unlock', runId, '--dir', dir, '--json'])).out);
      expect((await cli(['unlock', 'no-such-run', '--dir', dir])).code).toBe(2);
      expect((await cli(['unlock', runId, 'extra', '--dir', dir])).code).toBe(2);
    } finally {
      child.child.kill('SIGKILL');
    }
  });
});
