/**
 * The containment race: someone who can write inside the store swaps a
 * run directory with a symbolic link to a directory outside it, atomically
 * (renameat2 RENAME_EXCHANGE), over and over while a writer checkpoints. fsStorage must
 * never create, replace or read a file outside its root. Linux only (renameat2, /proc).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { fsStorage } from 'savepoint/fs';
import { FIXTURES } from './child.js';
import { scratchFolder } from '../../support/scratch.js';

const scratch = scratchFolder('fs-race');
const RACE_MS = Number(process.env.SAVEPOINT_RACE_MS ?? 3000);

/** Starts the swapper on `a` and `b`; resolves once it has swapped them at least once. */
async function startSwapper(a: string, b: string): Promise<{ stop(): Promise<number> }> {
  const child = spawn('python3', [join(FIXTURES, 'exchange-swapper.py'), a, b], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const seen: string[] = [];
  let wake: (() => void) | undefined;
  lines.on('line', (l) => {
    seen.push(l);
    wake?.();
  });
  const waitFor = async (prefix: string): Promise<string> => {
    for (;;) {
      const hit = seen.find((l) => l.startsWith(prefix));
      if (hit) return hit;
      if (child.exitCode !== null) throw new Error(`swapper exited with ${child.exitCode}`);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 50);
      });
    }
  };
  await waitFor('ready');
  return {
    async stop() {
      child.kill('SIGTERM');
      return Number((await waitFor('swaps ')).slice(6));
    },
  };
}

const SENTINELS = ['latest.json', 'index.json', 'cp_001.json'];

describe.runIf(process.platform === 'linux').each(['direct', 'journal'] as const)(
  'containment under a directory-swap race (%s)',
  (mode) => {
    it('a run directory swapped with a symlink to outside, again and again: nothing outside is created, replaced or read', async () => {
      const store = join(scratch, mode, 'store');
      const outside = join(scratch, mode, 'outside');
      mkdirSync(outside, { recursive: true });
      for (const name of SENTINELS) writeFileSync(join(outside, name), `outside ${name}`);
      const before = readdirSync(outside).sort();
      const link = join(scratch, mode, 'link');
      symlinkSync(outside, link);

      const s = fsStorage({ dir: store, journal: mode === 'journal' });
      expect((await s.ready()).containment).toBe('dir-fd');
      await s.put('checkpoints/run-1/latest.json', utf8Encode('{"seq":0}'));
      const swapper = await startSwapper(join(store, 'checkpoints', 'run-1'), link);
      const leaks: string[] = [];
      let ok = 0;
      let refused = 0;
      try {
        const end = Date.now() + RACE_MS;
        for (let seq = 1; Date.now() < end; seq++) {
          const body = utf8Encode(`{"seq":${seq}}`);
          const ops = [
            s.put('checkpoints/run-1/latest.json', body),
            s.put('checkpoints/run-1/index.json', body),
            s.put(`checkpoints/run-1/cp_${String(seq).padStart(3, '0')}.json`, body, { ifAbsent: true }),
            s.put('checkpoints/run-1/cp_001.json', body, { ifAbsent: true }),
            s.get('checkpoints/run-1/latest.json').then((got) => {
              if (got && Buffer.from(got.bytes).toString().startsWith('outside')) leaks.push('read an outside file');
            }),
          ];
          for (const r of await Promise.allSettled(ops)) {
            if (r.status === 'fulfilled') ok++;
            else refused++;
          }
        }
      } finally {
        await swapper.stop();
        await s.close();
      }
      const after = readdirSync(outside).sort();
      const changed = SENTINELS.filter((name) => readFileSync(join(outside, name), 'utf8') !== `outside ${name}`);
      expect({ created: after.filter((n) => !before.includes(n)), changed, leaks }).toEqual({ created: [], changed: [], leaks: [] });
      // The race was real: writes went through while the directory was being swapped.
      expect(ok).toBeGreaterThan(0);
      expect(refused + ok).toBeGreaterThan(20);
    });
  },
);
