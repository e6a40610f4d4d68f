/**
 * Power loss, simulated (DESIGN invariant 1): SIGKILL keeps the page cache, a power cut does
 * not. The file-system calls of a writer's life on fsStorage — checkpoints, journal commits,
 * applies and journal checkpoints, a prune, a recovery — are recorded, and every on-disk
 * state a crash can leave under POSIX rules (unsynced writes and name changes lost, or kept
 * in any subset, a write torn) is written out and resumed from: no acknowledged checkpoint
 * is lost, and the run always takes its next checkpoint. Without the journal and with it
 * (switching files every kilobyte) here; as `fsStorage({ dir })` comes in
 * power-loss-default.slow.test.ts, a file of its own so that the two run side by side.
 */
import { describe } from 'vitest';
import { itResumesEveryCrashState } from '../../support/power-loss/sweep-test.js';

describe('fsStorage under a simulated power loss', () => {
  itResumesEveryCrashState('direct');
  itResumesEveryCrashState('journal');
});
