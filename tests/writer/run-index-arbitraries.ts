import fc from 'fast-check';
import type { RunIndex } from 'savepoint/toolkit';

/** Text of an index's strings: mostly plain, quotes, backslashes and `metadata` among it; escapes (a control character, a lone surrogate, `u` after a backslash) rare enough that most indexes hold none. */
const unit = fc.oneof(
  { weight: 200, arbitrary: fc.constantFrom('a', 'Z', '0', '"', '\\', 'é', 'metadata', '/') },
  // An escaped backslash before a `u` (`\\u` in the JSON text) counts as an escape for the store, too.
  { weight: 1, arbitrary: fc.constantFrom('\u0001', '\ud800', 'u') },
);
const text = fc.string({ minLength: 1, maxLength: 12, unit });

/** A run index of up to six entries whose strings hold anything a tool might write. */
export const runIndexArbitrary: fc.Arbitrary<RunIndex> = fc
  .tuple(
    fc.array(
      fc.record({
        sequence: fc.integer({ min: 1, max: 1e9 }),
        checkpoint_id: text,
        trigger: text,
        timestamp: fc.constant('2026-01-01T00:00:00.000Z'),
        file_path: text,
        status: text,
      }),
      { maxLength: 6 },
    ),
    text,
  )
  .map(([checkpoints, runId]) => ({
    run_id: runId,
    checkpoint_count: checkpoints.length,
    checkpoints,
    last_updated: '2026-01-02T00:00:00.000Z',
  }));
