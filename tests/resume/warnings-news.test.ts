import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, planResume } from 'savepoint';
import { manualClock } from 'savepoint/testing';
import { formatDuration } from '../../src/contract/human-duration.js';

describe('resume warnings carry news: defaults that do not surprise', () => {
  it('a default-profile run that names no external state resumes without resume_external_state', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, runId: 'quiet', heartbeatIntervalMs: false });
    expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } })).ok).toBe(true);
    await writer.close();
    const plan = await planResume({ storage, profile: defaultProfile, runId: 'quiet' });
    expect(plan.warnings.map((w) => w.code)).toEqual([]);
  });

  it('a stale snapshot says its age in human units', async () => {
    const storage = memoryStorage();
    const clock = manualClock('2026-01-01T00:00:00Z');
    const writer = createWriter({ storage, runId: 'old', clock, heartbeatIntervalMs: false, lock: false });
    expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: {} })).ok).toBe(true);
    await writer.close();
    const later = { ...clock, now: () => Date.parse('2026-02-21T17:05:00Z') };
    const stale = (await planResume({ storage, profile: defaultProfile, runId: 'old', clock: later })).warnings.find(
      (w) => w.code === 'resume_snapshot_stale',
    );
    expect(stale?.message).toMatch(/^the snapshot is 52 days old;/);
  });

  it('formatDuration picks the largest sensible unit', () => {
    expect([0, 45_000, 59_400, 90_000, 3_600_000, 2 * 3_600_000 + 5 * 60_000, 47 * 3_600_000, 74_465 * 60_000].map(formatDuration)).toEqual(
      ['0 s', '45 s', '59 s', '2 min', '1 h', '2 h 5 min', '47 h', '52 days'],
    );
  });
});
