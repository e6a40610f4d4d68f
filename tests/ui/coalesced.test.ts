import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, systemClock } from 'savepoint';
import { startUiServer } from '../../src/ui/server.js';

describe('ui timeline under immutable history', () => {
  it('shows each coalesced trigger on the snapshot it joined, also when a later history entry carries it', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-c', heartbeatIntervalMs: false, coalesceWindowMs: 60_000 });
    for (const [source, step] of [
      ['step_boundary', 1],
      ['manual', 1],
      ['step_boundary', 2],
      ['error_boundary', 2],
      ['step_boundary', 3],
    ] as const) {
      expect((await writer.checkpoint({ source, status: 'in_progress', payload: { step } })).ok).toBe(true);
    }
    await writer.close();
    const ui = await startUiServer({ storage, profile: defaultProfile, clock: systemClock });
    try {
      const get = async (path: string): Promise<{ snapshots: { sequence: number; source: string; coalesced?: string[] }[] }> =>
        (await (await fetch(new URL(`api/${path}`, ui.url))).json()) as {
          snapshots: { sequence: number; source: string; coalesced?: string[] }[];
        };
      const expected = [
        [1, 'step_boundary', ['manual']],
        [2, 'step_boundary', ['error_boundary']],
        [3, 'step_boundary', []],
      ];
      expect((await get('runs/run-c/timeline')).snapshots.map((s) => [s.sequence, s.source, s.coalesced ?? []])).toEqual(expected);
      // answered again from the cache (quick, complete): the same attribution
      expect((await get('runs/run-c/timeline?quick=1')).snapshots.map((s) => [s.sequence, s.source, s.coalesced ?? []])).toEqual(expected);
    } finally {
      await ui.close();
    }
  });
});
