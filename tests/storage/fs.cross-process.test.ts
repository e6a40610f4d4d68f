/**
 * Two real processes race conditional writes on the same keys of one store: create-only
 * (link(2)) and replace-if-version (the per-key lock file). Exactly one may win each race.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utf8Decode } from '../../src/codec/utf8.js';
import { fsStorage } from 'savepoint/fs';
import { buildChildModule, spawnChild, type ChildModule, type LineChild } from './child.js';

interface Reply {
  id: number;
  ok: boolean;
  version?: string;
  code?: string;
}

let module: ChildModule;
const dir = mkdtempSync(join(tmpdir(), 'savepoint-fs-xproc-'));
beforeAll(async () => {
  module = await buildChildModule();
});
afterAll(() => {
  module?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

let nextId = 0;
async function race(workers: readonly LineChild[], cmd: (i: number) => Record<string, unknown>): Promise<Reply[]> {
  const at = Date.now() + 40;
  const ids = workers.map(() => nextId++);
  workers.forEach((w, i) => w.send(JSON.stringify({ id: ids[i], at, ...cmd(i) })));
  return Promise.all(workers.map(async (w, i) => JSON.parse(await w.waitFor((l) => l.startsWith(`{"id":${ids[i]},`))) as Reply));
}

describe.each(['direct', 'journal'] as const)('fsStorage between processes (%s)', (mode) => {
  it('two processes racing conditional writes on the same key: exactly one wins every race', async () => {
    const workers = [spawnChild(module, 'race-worker.mjs', [join(dir, mode), mode]), spawnChild(module, 'race-worker.mjs', [join(dir, mode), mode])];
    try {
      await Promise.all(workers.map((w) => w.waitFor((l) => l === 'ready')));
      const store = fsStorage({ dir: join(dir, mode), journal: mode === 'journal' });
      for (let round = 0; round < 15; round++) {
        const key = `checkpoints/run-${round}/history/cp_001.json`;
        const created = await race(workers, (i) => ({ key, value: `created by worker ${i}`, ifAbsent: true }));
        expect(created.filter((r) => r.ok), JSON.stringify(created)).toHaveLength(1);
        const loser = created.find((r) => !r.ok)!;
        expect(loser.code).toBe('checkpoint_conflict');
        const winner = created.findIndex((r) => r.ok);
        const stored = await store.get(key);
        expect(utf8Decode(stored!.bytes)).toBe(`created by worker ${winner}`);
        expect(stored!.version).toBe(created[winner]!.version);

        // Both read the same version, both try to replace it.
        const replaced = await race(workers, (i) => ({ key, value: `replaced by worker ${i}`, ifVersion: stored!.version }));
        expect(replaced.filter((r) => r.ok), JSON.stringify(replaced)).toHaveLength(1);
        expect(replaced.find((r) => !r.ok)!.code).toBe('checkpoint_conflict');
        const w2 = replaced.findIndex((r) => r.ok);
        const after = await store.get(key);
        expect(utf8Decode(after!.bytes)).toBe(`replaced by worker ${w2}`);
        expect(after!.version).toBe(replaced[w2]!.version);
      }
      await store.close();
    } finally {
      for (const w of workers) w.send(JSON.stringify({ exit: true }));
      await Promise.all(workers.map((w) => w.exited));
    }
    for (const w of workers) expect(w.stderr()).toBe('');
  });
});
