import { isCheckpointError, type CheckpointError } from 'savepoint';

/** The CheckpointError `p` rejects with; anything else it throws is rethrown, and fulfilling fails. */
export async function rejection(p: Promise<unknown>): Promise<CheckpointError> {
  try {
    await p;
  } catch (err) {
    if (isCheckpointError(err)) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}
