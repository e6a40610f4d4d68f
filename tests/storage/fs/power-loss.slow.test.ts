/**
 * Power loss, simulated (DESIGN invariant 1): SIGKILL keeps the page cache, a power cut does
 * not. The file-system calls of a writer's life on fsStorage — checkpoints, journal commits,
 * applies and journal checkpoints, a prune, a recovery — are recorded, and every on-disk
 * state a crash can leave under POSIX rules (unsynced writes and name changes lost, or kept
 * in any subset, a write torn) is written out and resumed from: no acknowledged checkpoint
 * is lost, and the run always takes its next checkpoint. In both fs modes.
 */
import { describe, expect, it } from 'vitest';
import { powerLossSweep } from '../../support/power-loss/scenario.js';

describe('fsStorage under a simulated power loss', () => {
  it.each(['direct', 'journal'] as const)(
    '%s: every crash state resumes with every acknowledged checkpoint',
    async (mode) => {
      const result = await powerLossSweep(mode, { randomPerPoint: 1 }); // `npm run campaign` draws more per point;
      console.log(`power loss (${mode}): ${result.calls} calls, ${result.states} crash states, ${result.failed} failed`);
      expect(result.problems).toEqual([]);
      expect(result.states).toBeGreaterThan(50);
    },
    900_000,
  );
});
