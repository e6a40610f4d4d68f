/**
 * Power loss, simulated (see power-loss.slow.test.ts), on fsStorage as it comes: the journal
 * at its default size, whose two preallocated files a writer's life never fills.
 */
import { describe } from 'vitest';
import { itResumesEveryCrashState } from '../../support/power-loss/sweep-test.js';

describe('fsStorage under a simulated power loss', () => {
  itResumesEveryCrashState('default');
});
