import type { BatchOperation, BatchOptions, BatchOutcome, DeleteOptions, PutOptions, PutResult } from '../../contract/storage.js';
import { assertBatchOperations } from '../batch-operation.js';
import { assertKey } from '../keys.js';
import { commitOperations } from './commit-builder.js';
import { deleteFile } from './contents.js';
import { putFile } from './put-file.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';
import { assertConditions, assertNoKnownFileAbove, checkSize } from './write-checks.js';
import { runWrite } from './write-path.js';

/** `put()`: one file through the contents API, or a commit when it is over the inline limit; `pending` while queued or held. */
export async function putKey(store: GitHubStoreState, key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
  const { ctx } = store;
  assertOpen(store);
  assertKey(key);
  assertConditions(key, opts, 'put');
  checkSize(store.maxValueBytes, key, bytes);
  assertNoKnownFileAbove(ctx, key);
  const data = bytes.slice();
  const op: BatchOperation = {
    type: 'put',
    key,
    bytes: data,
    ...(opts.ifAbsent ? { ifAbsent: true } : {}),
    ...(opts.ifVersion !== undefined ? { ifVersion: opts.ifVersion } : {}),
  };
  return runWrite(
    store,
    'put',
    [op],
    async () => {
      // Over the inline limit: a base64 blob and a commit through the Git Data API.
      if (data.length > ctx.inlineMaxBytes) {
        const [outcome] = await commitOperations(ctx, [op], { operation: 'put' });
        return { version: outcome?.type === 'put' ? outcome.version : '' };
      }
      return { version: await putFile(ctx, key, data, opts) };
    },
    (w, _existed, pending) => ({ version: w.versions[key]!, ...(pending ? { pending: true } : {}) }),
  );
}

/** `delete()`: one file through the contents API. */
export async function deleteKey(store: GitHubStoreState, key: string, opts: DeleteOptions = {}): Promise<boolean> {
  assertOpen(store);
  assertKey(key);
  assertConditions(key, opts, 'delete');
  const op: BatchOperation = { type: 'delete', key, ...(opts.ifVersion !== undefined ? { ifVersion: opts.ifVersion } : {}) };
  return runWrite(
    store,
    'delete',
    [op],
    () => deleteFile(store.ctx, key, opts),
    (_w, existed) => existed(key),
  );
}

/** `batch()`: one atomic commit; its puts are `pending` while queued or held. */
export async function batchWrite(
  store: GitHubStoreState,
  operations: readonly BatchOperation[],
  options?: BatchOptions,
): Promise<BatchOutcome[]> {
  assertOpen(store);
  assertBatchOperations(operations, (op) => {
    assertConditions(op.key, op, op.type);
    if (op.type === 'put') checkSize(store.maxValueBytes, op.key, op.bytes);
    if (op.type === 'put') assertNoKnownFileAbove(store.ctx, op.key);
  });
  const ops: BatchOperation[] = operations.map((op) => (op.type === 'put' ? { ...op, bytes: op.bytes.slice() } : { ...op }));
  if (ops.length === 0) return [];
  return runWrite(
    store,
    'batch',
    ops,
    () => commitOperations(store.ctx, ops, { operation: 'batch' }),
    (w, existed, pending) =>
      ops.map((op): BatchOutcome =>
        op.type === 'put'
          ? { type: 'put', key: op.key, version: w.versions[op.key]!, ...(pending ? { pending: true } : {}) }
          : op.type === 'delete'
            ? { type: 'delete', key: op.key, existed: existed(op.key) }
            : { type: 'check', key: op.key },
      ),
    options?.urgent === true,
  );
}
