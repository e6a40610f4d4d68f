/**
 * A run of many snapshots on a real directory, written fast: each snapshot is sealed by
 * the default profile's own document format and put at the key its layout names — the
 * files a writer leaves, without a writer's per-checkpoint bookkeeping (lock, index,
 * clock), which would make building 10,000 of them the slowest part of the test.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { defaultProfile } from 'savepoint';
import { newSnapshotId } from 'savepoint/toolkit';

/** The creation times (epoch ms) of the run's snapshots, by sequence - 1. */
export function bigRunTimes(count: number): number[] {
  const times: number[] = [];
  let t = Date.parse('2026-11-01T00:00:00Z');
  for (let sequence = 1; sequence <= count; sequence++) {
    // Every 500th snapshot follows six hours of silence: the timeline shows 1 gap per 500.
    t += sequence % 500 === 0 ? 6 * 3600_000 : 30_000;
    times.push(t);
  }
  return times;
}

export async function buildBigRun(runId: string, count: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-ui-big-'));
  const layout = defaultProfile.layout;
  const times = bigRunTimes(count);
  let last: Uint8Array | undefined;
  for (let sequence = 1; sequence <= count; sequence++) {
    const t = times[sequence - 1]!;
    const source = sequence % 5 === 0 ? 'timer' : 'step_boundary';
    const id = newSnapshotId(t);
    const { bytes } = await defaultProfile.document.encode({
      id,
      runId,
      sequence,
      createdAt: new Date(t).toISOString(),
      source,
      sourceDetails: [],
      status: 'in_progress',
      payload: { step: sequence, note: `step ${sequence}` },
    });
    const key = layout.historyKey!({ runId, id, sequence, source });
    mkdirSync(dirname(join(dir, key)), { recursive: true });
    writeFileSync(join(dir, key), bytes);
    last = bytes;
  }
  writeFileSync(join(dir, layout.latestKey(runId)), last!);
  return dir;
}
