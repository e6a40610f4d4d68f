import { assertArrayArgument, assertObjectArgument } from '../../contract/arguments.js';

/**
 * Shape check of a progress document passed to a public helper: the lists the helpers walk.
 * Not the full schema: the protocol passes drafts that are not yet sealed documents.
 */
export function assertProgressDocArgument(doc: unknown, fn: string): void {
  assertObjectArgument(doc, fn, 'doc');
  const d = doc as Record<string, unknown>;
  for (const field of ['completedTasks', 'remainingTasks', 'decisions', 'blockers'] as const)
    assertArrayArgument(d[field], fn, `doc.${field}`);
}
