import fc from 'fast-check';
import type { ProgressDocument } from 'savepoint/progress-protocol';

const word = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.,()'@/+*|"-]{0,10}$/).filter((w) => !/^none\.?$/i.test(w));
const line = fc.array(word, { minLength: 1, maxLength: 5 }).map((ws) => ws.join(' '));

/** Progress documents in normal form. */
export const progressDocument: fc.Arbitrary<ProgressDocument> = fc
  .record({
    issue: fc.record({ id: fc.stringMatching(/^[A-Z]{2,4}-\d{1,4}$/), title: fc.oneof(line, fc.constant('')) }),
    session: fc.oneof(fc.constant('2025-12-14T15:30:00.000Z'), line),
    executionMode: fc.constantFrom('tdd', 'quick', 'pair', ''),
    completedTasks: fc.array(line, { maxLength: 4 }),
    currentTask: fc.option(fc.record({ description: line, status: fc.oneof(line, fc.constant('')) }), { nil: undefined }),
    remainingTasks: fc.array(line, { maxLength: 4 }),
    decisions: fc.array(fc.record({ decision: line, rationale: fc.oneof(line, fc.constant('')) }), { maxLength: 3 }),
    blockers: fc.array(fc.record({ description: line, unblockedBy: fc.oneof(line, fc.constant('')) }), { maxLength: 3 }),
    continuationPrompt: fc.array(line, { minLength: 1, maxLength: 3 }).map((ls) => ls.join('\n')),
    extraSections: fc.option(
      fc.array(fc.record({ heading: fc.constantFrom('Notes', 'Links'), body: fc.oneof(line, fc.constant('')) }), {
        minLength: 1,
        maxLength: 2,
      }),
      { nil: undefined },
    ),
  })
  .map((d) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)) as ProgressDocument);
