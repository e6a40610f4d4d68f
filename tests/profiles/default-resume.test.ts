import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, findIncompleteRuns, isCheckpointError, jsonProfile, memoryStorage, planResume } from 'savepoint';

interface AgentState {
  step: number;
  notes: string[];
}

describe('resume entry points default the profile as createWriter does', () => {
  it('planResume and findIncompleteRuns without a profile read what createWriter wrote without one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string(), { maxLength: 4 }), fc.integer({ min: 1, max: 5 }), async (notes, steps) => {
        const storage = memoryStorage();
        const writer = createWriter<AgentState>({ storage, runId: 'run-1' });
        for (let step = 1; step <= steps; step++) {
          const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step, notes } });
          expect(r.ok).toBe(true);
        }
        await writer.close();
        const plan = await planResume<AgentState>({ storage, runId: 'run-1' });
        const explicit = await planResume<AgentState>({ storage, profile: defaultProfile, runId: 'run-1' });
        const viaJson = await planResume({ storage, profile: jsonProfile<AgentState>(), runId: 'run-1' });
        expect(plan.snapshot.payload).toEqual({ step: steps, notes });
        expect(explicit.snapshot.payload).toEqual(plan.snapshot.payload);
        expect(viaJson.snapshot.sequence).toBe(plan.snapshot.sequence);
        const runs = await findIncompleteRuns<AgentState>({ storage });
        expect(runs.map((r) => r.runId)).toEqual(['run-1']);
      }),
      { numRuns: 20 },
    );
  });

  it('still refuses what is not an options object, with the typed error', async () => {
    for (const bad of [undefined, null, 'run-1', 42]) {
      const error = await planResume(bad as never).catch((e: unknown) => e);
      expect(isCheckpointError(error) && error.reasonCode).toBe('checkpoint_config_invalid');
      const listed = await findIncompleteRuns(bad as never).catch((e: unknown) => e);
      expect(isCheckpointError(listed) && listed.reasonCode).toBe('checkpoint_config_invalid');
    }
  });
});
