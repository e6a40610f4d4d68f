import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { assertBatchOperations } from '../batch-operation.js';
import type { PostgresQueryResult } from './driver.js';
import { checkSize, conflict, versionParam } from './checks.js';
import { toStoreError } from './errors.js';
import { readyPool } from './migrate.js';
import { orderKey } from './order-key.js';
import { CONFLICT_SQLSTATE } from './sql.js';
import type { PostgresStoreState } from './store-state.js';

interface BatchRow {
  op: number;
  version: string | null;
  existed: boolean | null;
}

const ifAbsentOf = (op: BatchOperation): boolean => op.type !== 'delete' && op.ifAbsent === true;

/** The `ifVersion` parameter of each operation (null: none); a version this store never issued fails the batch here. */
function versionsOf(operations: readonly BatchOperation[]): (string | null)[] {
  const versions: (string | null)[] = [];
  for (const op of operations) {
    if (op.ifVersion === undefined) {
      versions.push(null);
      continue;
    }
    const v = typeof op.ifVersion === 'string' && !ifAbsentOf(op) ? versionParam(op.ifVersion) : undefined;
    // A version this store never issued cannot match: the batch fails before reaching the server.
    if (v === undefined) throw conflict(op.key, 'version does not match');
    versions.push(v);
  }
  return versions;
}

/** `batch()`: every operation in one call of the table's batch function (one transaction, one round trip). */
export async function runBatch(state: PostgresStoreState, operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
  assertBatchOperations(operations, (op) => {
    if (op.type === 'put') checkSize(state.settings.maxValueBytes, op.key, op.bytes);
  });
  if (operations.length === 0) return [];
  const versions = versionsOf(operations);
  // Copied now, before any await: the caller may reuse its buffers.
  const values = operations.map((op) => (op.type === 'put' ? Buffer.from(op.bytes) : null));
  const p = await readyPool(state);
  let res: PostgresQueryResult<BatchRow>;
  state.roundTrips++;
  try {
    res = await p.query<BatchRow>(state.settings.sql.batch, [
      operations.map((op) => op.type),
      operations.map((op) => orderKey(op.key)),
      operations.map((op) => op.key),
      values,
      versions,
      operations.map(ifAbsentOf),
    ]);
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    if (e?.code === CONFLICT_SQLSTATE) {
      const op = operations[Number(e.message) - 1];
      if (op) throw conflict(op.key, op.type === 'check' ? 'checked condition does not hold' : 'key exists, or its version changed');
    }
    throw toStoreError(err, 'batch', state.scrubber);
  }
  const rows = [...res.rows].sort((a, b) => a.op - b.op);
  return operations.map((op, i): BatchOutcome => {
    const row = rows[i];
    if (op.type === 'put') return { type: 'put', key: op.key, version: row!.version! };
    if (op.type === 'delete') return { type: 'delete', key: op.key, existed: row!.existed === true };
    return { type: 'check', key: op.key };
  });
}
