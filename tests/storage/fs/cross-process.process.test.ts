/**
 * Two real processes race conditional writes on the same keys of one store: create-only
 * (link(2)) and replace-if-version (the per-key lock file). Exactly one may win each race.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utf8Decode } from '../../../src/codec/utf8.js';
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
    const workers = [
      spawnChild(module, 'race-worker.mjs', [join(dir, mode), mode]),
      spawnChild(module, 'race-worker.mjs', [join(dir, mode), mode]),
    ];
    try {
      await Promise.all(workers.map((w) => w.waitFor((l) => l === 'ready')));
      const store = fsStorage({ dir: join(dir, mode), journal: mode === 'journal' });
      for (let round = 0; round < 15; round++) {
        const key = `checkpoints/run-${round}/history/cp_001.json`;
        const created = await race(workers, (i) => ({ key, value: `created by worker ${i}`, ifAbsent: true }));
        expect(
          created.filter((r) => r.ok),
          JSON.stringify(created),
        ).toHaveLength(1);
        const loser = created.find((r) => !r.ok)!;
        expect(loser.code).toBe('checkpoint_conflict');
        const winner = created.findIndex((r) => r.ok);
        const stored = await store.get(key);
        expect(utf8Decode(stored!.bytes)).toBe(`created by worker ${winner}`);
        expect(stored!.version).toBe(created[winner]!.version);

        // Both read the same version, both try to replace it.
        const replaced = await race(workers, (i) => ({ key, value: `replaced by worker ${i}`, ifVersion: stored!.version }));
        expect(
          replaced.filter((r) => r.ok),
          JSON.stringify(replaced),
        ).toHaveLength(1);
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

describe('journal: acknowledged at the commit point, applied after', () => {
  const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
  const onDisk = (d: string, rel: string): string | undefined => {
    try {
      return readFileSync(join(d, rel), 'utf8');
    } catch {
      return undefined;
    }
  };
  const seed = async (d: string): Promise<void> => {
    const s = fsStorage({ dir: d, journal: true });
    await s.put('checkpoints/run-1/latest.json', bytes('latest v1'));
    await s.close();
  };

  it('another process reads an acknowledged batch at once, with its versions, while its writer has not applied the files yet', async () => {
    const d = join(dir, 'ack-stop');
    await seed(d);
    // The reader opens first: opening replays under the journal lock, which the stopped writer will hold.
    const reader = fsStorage({ dir: d, journal: true });
    await reader.ready();
    const child = spawnChild(module, 'ack-then-stop.mjs', [d, 'stop']);
    try {
      const line = await child.waitFor((l) => l.startsWith('acked '));
      const [historyVersion, latestVersion] = JSON.parse(line.slice(6)) as string[];
      // The writer is stopped between its answer and its renames: a reader that is not savepoint sees the old, whole files.
      expect(onDisk(d, 'checkpoints/run-1/latest.json')).toBe('latest v1');
      expect(onDisk(d, 'checkpoints/run-1/history/cp_002.json')).toBeUndefined();
      // savepoint in another process reads the journal's records: the acknowledged state and versions.
      expect(await reader.get('checkpoints/run-1/latest.json')).toEqual({ bytes: bytes('latest v2'), version: latestVersion });
      expect(await reader.get('checkpoints/run-1/history/cp_002.json')).toEqual({ bytes: bytes('history 2'), version: historyVersion });
      const listed: { key: string; version: string }[] = [];
      for await (const e of reader.list('checkpoints/run-1/')) listed.push({ key: e.key, version: e.version });
      expect(listed).toEqual([
        { key: 'checkpoints/run-1/history/cp_002.json', version: historyVersion },
        { key: 'checkpoints/run-1/latest.json', version: latestVersion },
      ]);
      child.proc.kill('SIGCONT');
      await child.waitFor((l) => l === 'closed');
      // Applied: the files hold the batch, and their versions are the ones acknowledged.
      expect(onDisk(d, 'checkpoints/run-1/latest.json')).toBe('latest v2');
      expect((await reader.get('checkpoints/run-1/latest.json'))?.version).toBe(latestVersion);
      expect((await reader.get('checkpoints/run-1/history/cp_002.json'))?.version).toBe(historyVersion);
    } finally {
      child.proc.kill('SIGKILL');
      await child.exited;
      await reader.close();
    }
  });

  it('a writer killed between its answer and its renames: the next open puts the acknowledged batch in the files', async () => {
    const d = join(dir, 'ack-kill');
    await seed(d);
    const child = spawnChild(module, 'ack-then-stop.mjs', [d, 'kill']);
    const line = await child.waitFor((l) => l.startsWith('acked '));
    const [, latestVersion] = JSON.parse(line.slice(6)) as string[];
    expect((await child.exited).signal).toBe('SIGKILL');
    expect(onDisk(d, 'checkpoints/run-1/latest.json')).toBe('latest v1');
    const reopened = fsStorage({ dir: d, journal: true });
    expect((await reopened.ready()).journal).toMatchObject({ records: 1, repaired: 2 });
    expect(onDisk(d, 'checkpoints/run-1/latest.json')).toBe('latest v2');
    expect(onDisk(d, 'checkpoints/run-1/history/cp_002.json')).toBe('history 2');
    const got = await reopened.get('checkpoints/run-1/latest.json');
    expect(got?.bytes).toEqual(bytes('latest v2'));
    // Replayed by a new process: a file of its own, so a version of its own.
    expect(got?.version).not.toBe(latestVersion);
    await reopened.close();
  });
});
