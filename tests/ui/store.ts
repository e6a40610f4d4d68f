/**
 * Builds the stores the viewer's tests look at, through the public writer on a real
 * directory, with a hand-moved clock so times (heartbeats, a gap) are exact.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriter, defaultProfile, type DefaultTrigger, type JsonValue, type LifecycleStatus } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { manualClock } from 'savepoint/testing';

export const START = Date.parse('2026-11-20T09:00:00Z');

/** A store with four runs: finished, idle with heartbeats and a gap, damaged, and held by a live writer. */
export async function buildViewerStore(): Promise<{ dir: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-ui-'));
  const written = fsStorage({ dir, layout: 'files' });
  const clock = manualClock(START);
  const write = async (
    runId: string,
    steps: { source: DefaultTrigger; status: LifecycleStatus; payload: JsonValue; advanceMs: number }[],
  ) => {
    const writer = createWriter({
      storage: written,
      profile: defaultProfile,
      runId,
      clock,
      autoRetention: false,
      heartbeatIntervalMs: false,
    });
    for (const s of steps) {
      await clock.advance(s.advanceMs);
      const r = await writer.checkpoint({ source: s.source, status: s.status, payload: s.payload });
      if (!r.ok) throw r.error;
    }
    await writer.close();
  };
  await write('build-finished', [
    { source: 'step_boundary', status: 'in_progress', payload: { step: 1, files: ['a.ts'] }, advanceMs: 1000 },
    { source: 'step_boundary', status: 'in_progress', payload: { step: 2, files: ['a.ts', 'b.ts'] }, advanceMs: 60_000 },
    { source: 'manual', status: 'completed', payload: { step: 3, files: ['a.ts', 'b.ts'], result: 'ok' }, advanceMs: 60_000 },
  ]);
  await write('agent-idle', [
    { source: 'step_boundary', status: 'in_progress', payload: { step: 1, notes: 'start' }, advanceMs: 1000 },
    { source: 'timer', status: 'in_progress', payload: { step: 1, notes: 'start', beat: 1 }, advanceMs: 120_000 },
    { source: 'timer', status: 'in_progress', payload: { step: 1, notes: 'start', beat: 2 }, advanceMs: 120_000 },
    // Three hours of silence: the timeline shows a gap.
    {
      source: 'step_boundary',
      status: 'in_progress',
      payload: { step: 2, notes: 'resumed', extra: { nested: [1, 2] } },
      advanceMs: 3 * 3600_000,
    },
  ]);
  await write('agent-damaged', [
    { source: 'step_boundary', status: 'in_progress', payload: { step: 1 }, advanceMs: 1000 },
    { source: 'step_boundary', status: 'in_progress', payload: { step: 2 }, advanceMs: 1000 },
  ]);
  // Closed (its journal checkpointed) before a file is changed behind its back: an open store's next opening would replay it.
  await written.close();
  // Damage the damaged run's newest history entry: verify and the timeline must show it.
  const history = join(dir, 'checkpoints', 'agent-damaged', 'history');
  const { readdirSync } = await import('node:fs');
  const newest = readdirSync(history).sort().at(-1)!;
  writeFileSync(join(history, newest), '{"not":"a snapshot"}');
  // A writer still at work (real clock, so its lease is live now): the runs view names the holder.
  const storage = fsStorage({ dir });
  const live = createWriter({ storage, profile: defaultProfile, runId: 'agent-live', autoRetention: false, heartbeatIntervalMs: false });
  const first = await live.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
  if (!first.ok) throw first.error;
  return {
    dir,
    /** Closes the writer and the store, and removes the directory (every test run made one and left it in the temp directory). */
    async close() {
      await live.close();
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
