/**
 * Under a low descriptor limit (`ulimit -n 512`), a batch of 2,000 puts over 300 directories and
 * a checkpoint of a 4 MiB state of small records with defaultProfile (thousands of content chunks
 * in one write) succeed in both fs modes (regression: the journal held one open temp file per put
 * and one directory per directory of a batch, and direct puts had no bound, so both failed with
 * `EMFILE` — the checkpoint at the default limit of 1024 already). Each case is a child process
 * (descriptor-limit-child.ts) started by bash with its limit lowered; the batch's files are then
 * checked on disk by this process, so the journal's applies, not only its reads, are covered.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scratchDirs } from '../../support/scratch.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./descriptor-limit-child.ts', import.meta.url));
/** Half the usual default (1024): room for the store's bounded descriptors, far from one per put. */
const LIMIT = 512;
const newDir = scratchDirs('descriptor-limit');

interface ChildOutcome {
  readonly ok: boolean;
  readonly error?: string;
  readonly peakDescriptors: number | string;
}

function runLimited(dir: string, mode: string, scenario: string): Promise<{ outcome?: ChildOutcome; code: number | null; err: string }> {
  // `exec`: the limit is bash's, inherited by node; the arguments are passed as positional parameters, never parsed as shell text.
  const script = `ulimit -n ${LIMIT} && exec "$0" --import tsx "$@"`;
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script, process.execPath, CHILD, dir, mode, scenario], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop();
      resolve({ outcome: line ? (JSON.parse(line) as ChildOutcome) : undefined, code, err });
    });
  });
}

const keyOf = (i: number): string => `many/d${i % 300}/k${i}.bin`;
const bytesOf = (i: number, round: number): string => `value ${i} of round ${round} `.repeat(1 + (i % 7));

describe.skipIf(process.platform !== 'linux')(`fsStorage under ulimit -n ${LIMIT}`, () => {
  describe.each(['journal', 'direct'] as const)('%s mode', (mode) => {
    it('a batch of 2,000 puts over 300 directories, then 1,500 more, all land and read back', { timeout: 120_000 }, async () => {
      const dir = newDir();
      const { outcome, code, err } = await runLimited(dir, mode, 'batch');
      expect(outcome, err).toMatchObject({ ok: true });
      expect(code).toBe(0);
      expect(outcome!.peakDescriptors).toBeLessThan(LIMIT);
      // The files themselves (the journal applied them before its store closed), as the child's two rounds left them.
      for (let i = 0; i < 2500; i++) {
        const round = i >= 2000 || i % 2 === 0 ? 2 : 1;
        expect(readFileSync(join(dir, keyOf(i)), 'utf8')).toBe(bytesOf(i, round));
      }
    });

    it(
      'two checkpoints of a 4 MiB state of small records (thousands of chunks each) are written and resumed',
      { timeout: 180_000 },
      async () => {
        const { outcome, code, err } = await runLimited(newDir(), mode, 'checkpoint');
        expect(outcome, err).toMatchObject({ ok: true });
        expect(code).toBe(0);
      },
    );
  });
});
