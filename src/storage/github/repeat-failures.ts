import { CheckpointError, isCheckpointError } from '../../contract/errors.js';
import type { BatchOperation } from '../../contract/storage.js';
import { withDetails } from './contents.js';
import type { QueuedWrite } from './emergency-queue.js';
import { gitBlobSha } from './git-blob.js';
import type { GitHubStoreState } from './store-state.js';

function reportFailure(
  store: GitHubStoreState,
  operations: readonly BatchOperation[],
  e: CheckpointError,
  attempts: number,
  requests: number,
  repeated: boolean,
): void {
  store.emit({
    type: 'write_failed',
    level: 'error',
    keys: operations.map((o) => o.key),
    reasonCode: e.reasonCode,
    attempts,
    requests,
    repeated,
    message: e.message,
  });
}

/**
 * What makes two writes "the same write". A create-only put names a checkpoint (a history
 * file is written once): a batch holding one is the same write when it creates the same
 * files, whatever their bytes and its other parts (they carry times: a run's first
 * checkpoint creates its latest and index too, and a writer's retry stamps them anew).
 * Anything else must match exactly: keys, conditions and bytes.
 */
async function fingerprint(kind: string, ops: readonly BatchOperation[]): Promise<string> {
  const creates = ops.filter((op) => op.type === 'put' && op.ifAbsent === true);
  const named = creates.length > 0 ? creates : ops;
  return JSON.stringify([
    kind,
    await Promise.all(
      named.map(async (op) => [
        op.type,
        op.key,
        op.type !== 'delete' && op.ifAbsent === true,
        op.ifVersion ?? null,
        op.type === 'put' && creates.length === 0 ? await gitBlobSha(op.bytes) : null,
      ]),
    ),
  ]);
}

/**
 * Runs a direct write under the attempt budget: a failure reports its attempts and requests
 * (error details and a `write_failed` event); one that used every attempt is remembered for
 * `repeatFailureMs`, so sending the very same write again fails without a request — the
 * spec's "max 3 attempts" holds per checkpoint even when the caller retries too.
 */
export async function attemptDirect<T>(
  store: GitHubStoreState,
  kind: QueuedWrite['kind'],
  operations: readonly BatchOperation[],
  direct: () => Promise<T>,
): Promise<T> {
  const { failedWrites, repeatFailureMs, clock } = store;
  let print: string | undefined;
  if (repeatFailureMs > 0 && failedWrites.size > 0) {
    for (const [k, v] of failedWrites) if (clock.now() - v.atMs >= repeatFailureMs) failedWrites.delete(k);
    print = await fingerprint(kind, operations);
    const known = failedWrites.get(print);
    if (known) {
      const again = withDetails(known.error, { repeated: true });
      reportFailure(store, operations, again, 0, 0, true);
      throw again;
    }
  }
  const before = store.http.stats().requests;
  try {
    return await direct();
  } catch (err) {
    if (!isCheckpointError(err) || err.reasonCode === 'checkpoint_rate_limited') throw err;
    const requests = store.http.stats().requests - before;
    const attempts = typeof err.details.attempts === 'number' ? err.details.attempts : 1;
    const e = withDetails(err, { attempts, requests });
    reportFailure(store, operations, e, attempts, requests, false);
    if (repeatFailureMs > 0 && err.details.attemptsExhausted === true) {
      failedWrites.set(print ?? (await fingerprint(kind, operations)), { error: e, atMs: clock.now() });
      if (failedWrites.size > 100) failedWrites.delete(failedWrites.keys().next().value!);
    }
    throw e;
  }
}
