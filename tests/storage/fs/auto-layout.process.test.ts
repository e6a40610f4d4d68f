/**
 * `fsStorage({ dir })` without a layout, in two processes opening one new directory at the same
 * moment: with the same declaration they make one store and both write to it; a packed store and
 * a file layout (a plain put) never both acknowledge a write, and what one acknowledged is read
 * back, or the directory refused, never answered without it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { buildChildModule, spawnChild, type ChildModule } from './child.js';

interface Outcome {
  readonly ok: boolean;
  readonly layout?: string;
  readonly code?: string;
}

let module: ChildModule;
const base = mkdtempSync(join(tmpdir(), 'savepoint-fs-auto-xproc-'));
beforeAll(async () => {
  module = await buildChildModule();
});
afterAll(() => {
  module?.dispose();
  rmSync(base, { recursive: true, force: true });
});

/** Two workers making `fsStorage({ dir })` in `dir` at the same moment, declaring `readers`. */
async function race(dir: string, readers: readonly [string, string]): Promise<Outcome[]> {
  const at = String(Date.now() + 400);
  const workers = readers.map((r, i) => spawnChild(module, 'auto-layout-worker.mjs', [dir, r, `w${i}`, at]));
  return Promise.all(workers.map(async (w) => JSON.parse(await w.waitFor((line) => line.startsWith('{'))) as Outcome));
}

describe('fsStorage without a layout, two processes on one new directory', () => {
  it('both declaring savepoint: one packed store, each write read back', async () => {
    for (let round = 0; round < 4; round++) {
      const dir = join(base, `same-${round}`);
      const outcomes = await race(dir, ['savepoint', 'savepoint']);
      expect(outcomes).toEqual([
        { ok: true, layout: 'packed' },
        { ok: true, layout: 'packed' },
      ]);
      const storage = fsStorage({ dir });
      for (const name of ['w0', 'w1']) expect(new TextDecoder().decode((await storage.get(`from-${name}`))?.bytes)).toBe(name);
      await storage.close();
    }
  }, 60_000);

  it('one declaring savepoint, the other a plain put: never both acknowledged in two layouts, nothing acknowledged hidden', async () => {
    for (let round = 0; round < 6; round++) {
      const dir = join(base, `mixed-${round}`);
      const outcomes = await race(dir, ['savepoint', 'none']);
      const acknowledged = outcomes.flatMap((o, i) => (o.ok ? [{ name: `w${i}`, layout: o.layout }] : []));
      expect(new Set(acknowledged.map((a) => a.layout)).size, JSON.stringify(outcomes)).toBeLessThanOrEqual(1);
      const storage = fsStorage({ dir });
      for (const { name } of acknowledged) {
        try {
          expect(new TextDecoder().decode((await storage.get(`from-${name}`))?.bytes)).toBe(name);
        } catch (err) {
          expect(isCheckpointError(err, 'checkpoint_config_invalid')).toBe(true);
        }
      }
      await storage.close();
    }
  }, 60_000);
});
