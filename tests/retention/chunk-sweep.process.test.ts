/**
 * SIGKILL in the middle of a chunk sweep (run alone, or started by the writer's automatic bound),
 * and in the middle of a write of chunked checkpoints, on fs: every kept checkpoint (every
 * acknowledged one) still reads back, and a sweep after the restart keeps it so.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll, sweepChunks, type JsonValue, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { fsStorage } from 'savepoint/fs';
import { bundledChildPerFile } from '../support/bundle-child.js';
import { watchLines } from '../support/line-child.js';
import { scratchDirs } from '../support/scratch.js';
import { CHUNK_PREFIX } from '../../src/codec/chunking.js';
import { autoState } from '../fixtures/chunks/auto-state.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// One bundle for every start: a plain `node` start, where the tsx loader cost about a second of CPU each.
const bundled = bundledChildPerFile(join(ROOT, 'tests', 'fixtures', 'chunks', 'child.ts'), 'savepoint-chunk-kill-');
const newDir = scratchDirs('chunk-kill');

function start(mode: 'sweep' | 'remember' | 'write' | 'auto', dir: string) {
  const proc = spawn(process.execPath, [bundled.bundle, mode, dir], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  return watchLines(proc, { timeoutMs: 60_000 });
}

const text = (n: number): string => `message ${n}: `.padEnd(2000, String.fromCharCode(97 + (n % 26)) + ' xyz ');

/** A store with two runs, some checkpoints dropped (their chunks unreferenced); returns what each kept document holds. */
async function seed(storage: StorageAdapter): Promise<Map<string, JsonValue>> {
  const kept = new Map<string, JsonValue>();
  for (const run of ['a', 'b']) {
    const writer = createWriter({ storage, profile: defaultProfile, runId: run, heartbeatIntervalMs: false, autoRetention: false });
    const messages = Array.from({ length: 12 }, (_, i) => text(i));
    for (let n = 0; n < 6; n++) {
      messages[(n * 5) % messages.length] = text(100 + n); // edits: each state has chunks of its own
      const payload = { messages: [...messages], n };
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload });
      if (!r.ok) throw r.error;
      kept.set(r.key!, payload);
    }
    await writer.close();
    kept.set(`checkpoints/${run}/latest.json`, kept.get([...kept.keys()].at(-1)!)!);
  }
  const history = [...kept.keys()].filter((k) => k.includes('/history/'));
  for (const key of history.filter((_, i) => i % 2 === 0)) {
    await storage.delete(key);
    kept.delete(key);
  }
  return kept;
}

async function expectKept(dir: string, kept: Map<string, JsonValue>): Promise<void> {
  const storage = fsStorage({ dir });
  for (const [key, payload] of kept) expect((await readSnapshot(storage, defaultProfile, key))?.payload, key).toEqual(payload);
  await storage.close();
}

describe('SIGKILL and content chunks', () => {
  it.each([
    ['hiding', 'sweep'],
    ['remembering', 'remember'],
  ] as const)(
    'mid-sweep (%s): nothing a kept checkpoint references is lost, at any moment of the kill',
    async (_how, mode) => {
      for (let round = 0; round < 6; round++) {
        const dir = newDir();
        const storage = fsStorage({ dir });
        const kept = await seed(storage);
        await storage.close();
        const child = start(mode, dir);
        await child.waitFor((l) => l === 'ready');
        // Remembering, the first sweep deletes nothing: half the rounds kill once it has ended, in the sweeps that delete.
        if (mode === 'remember' && round % 2 === 1) await child.waitFor((l) => l === 'swept 0');
        await new Promise((r) => setTimeout(r, 20 + round * 40));
        child.proc.kill('SIGKILL');
        await child.exited;
        await expectKept(dir, kept);
        const after = fsStorage({ dir });
        await sweepChunks(after, { graceMs: 0 });
        await sweepChunks(after, { graceMs: 0 });
        await after.close();
        await expectKept(dir, kept);
      }
    },
    180_000,
  );

  it('mid-write: every acknowledged checkpoint reads back (its chunks were durable before it), and survives sweeps', async () => {
    for (let round = 0; round < 3; round++) {
      const dir = newDir();
      const child = start('write', dir);
      await child.waitFor((l) => l === 'ready');
      await child.waitFor((l) => l.startsWith(`ok `) && Number(l.split(' ')[2]) >= 3 + round * 3);
      child.proc.kill('SIGKILL');
      await child.exited;
      const storage = fsStorage({ dir });
      const acked = child.lines.filter((l) => l.startsWith('ok ')).map((l) => l.split(' ')[1]!);
      expect(acked.length).toBeGreaterThan(0);
      expect((await listAll(storage, CHUNK_PREFIX)).length).toBeGreaterThan(0);
      for (const key of acked) expect(await readSnapshot(storage, defaultProfile, key), key).toBeDefined();
      await sweepChunks(storage, { graceMs: 0 });
      await sweepChunks(storage, { graceMs: 0 });
      for (const key of acked) expect(await readSnapshot(storage, defaultProfile, key), key).toBeDefined();
      await storage.close();
    }
  }, 180_000);

  it('mid-sweep of the automatic bound: a writer killed while its automatic sweep runs leaves every stored checkpoint readable', async () => {
    for (let round = 0; round < 4; round++) {
      const dir = newDir();
      const child = start('auto', dir);
      await child.waitFor((l) => l === 'ready');
      // Sweeps run after every prune; kill at a different moment each round, once several have run.
      await child.waitFor(() => child.lines.filter((l) => l === 'swept').length >= 2 + round);
      await new Promise((r) => setTimeout(r, round * 7));
      child.proc.kill('SIGKILL');
      await child.exited;
      expect(child.lines.filter((l) => l.startsWith('error '))).toEqual([]);
      const acked = new Map(
        child.lines.filter((l) => l.startsWith('ok ')).map((l) => [l.split(' ')[1]!, Number(l.split(' ')[2])] as const),
      );
      const storage = fsStorage({ dir });
      const check = async (): Promise<number> => {
        let read = 0;
        for (const entry of await listAll(storage, 'checkpoints/auto/history/')) {
          const n = acked.get(entry.key);
          if (n === undefined) continue; // written, not yet acknowledged when killed
          expect((await readSnapshot(storage, defaultProfile, entry.key))?.payload, entry.key).toEqual(autoState(n));
          read++;
        }
        return read;
      };
      expect(await check()).toBeGreaterThanOrEqual(3);
      // A sweep after the restart finishes what the killed one began, and keeps every stored checkpoint readable.
      await sweepChunks(storage, { graceMs: 0 });
      await sweepChunks(storage, { graceMs: 0 });
      expect(await check()).toBeGreaterThanOrEqual(3);
      await storage.close();
    }
  }, 180_000);
});
