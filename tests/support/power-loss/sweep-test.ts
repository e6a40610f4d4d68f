/** The power-loss sweep of one fs mode as a vitest test (its files: tests/storage/fs/power-loss*.slow.test.ts). */
import { expect, it } from 'vitest';
import { powerLossSweep, type FsMode } from './scenario.js';

export function itResumesEveryCrashState(mode: FsMode): void {
  it(`${mode}: every crash state resumes with every acknowledged checkpoint`, async () => {
    const result = await powerLossSweep(mode, { randomPerPoint: 1 }); // `npm run campaign` draws more per point;
    console.log(`power loss (${mode}): ${result.calls} calls, ${result.states} crash states, ${result.failed} failed`);
    expect(result.problems).toEqual([]);
    expect(result.states).toBeGreaterThan(50);
  }, 900_000);
}
