import type { BatchOperation } from '../../contract/storage.js';
import { ifAbsentOf, isPair, type BatchRow } from './batch-shape.js';
import { CONDITION, DELETE_COLUMNS, groupRows, MAX_GROUP_DELETES, MAX_GROUP_PUTS, PUT_COLUMNS } from './group-sql.js';
import { orderKey } from './order-key.js';
import type { PlannedBatch } from './store-state.js';

/*
 * Waiting batches that go together as one plain statement (group-sql.ts) rather than through the
 * batches function: lone puts (a LangGraph task's writes) and pairs (its checkpoints), each key
 * named once in the group. Set-wise, with no PL/pgSQL block nor subtransaction a caller, it costs
 * the server less: about a fifth less CPU a LangGraph superstep at 64 threads (bench/LOG.md).
 */

/** A lone put or a pair: a batch the set group takes. */
function isGroupable(batch: PlannedBatch): boolean {
  const operations = batch.operations;
  return operations.length === 1 ? operations[0]!.type === 'put' : isPair(operations);
}

/** The put rows and delete rows a batch adds to a set group. */
function rowsOf(batch: PlannedBatch): { puts: number; deletes: number } {
  const count = batch.operations.length;
  return { puts: Math.min(count, 2), deletes: Math.max(0, count - 2) };
}

/**
 * How many batches from the front of `queue` go as one set group, at most `max`: groupable
 * batches, no key named twice, within the statement's rows. Fewer than two: none (the front
 * batch goes its usual way).
 */
export function setGroupLength(queue: readonly PlannedBatch[], max: number): number {
  const keys = new Set<string>();
  let puts = 0;
  let deletes = 0;
  let taken = 0;
  for (const batch of queue) {
    if (taken === max || !isGroupable(batch)) break;
    const rows = rowsOf(batch);
    if (puts + rows.puts > MAX_GROUP_PUTS || deletes + rows.deletes > MAX_GROUP_DELETES) break;
    if (batch.operations.some((op) => keys.has(op.key))) break;
    for (const op of batch.operations) keys.add(op.key);
    puts += rows.puts;
    deletes += rows.deletes;
    taken++;
  }
  return taken >= 2 ? taken : 0;
}

const conditionOf = (op: BatchOperation, version: string | null): number =>
  version !== null ? CONDITION.ifVersion : ifAbsentOf(op) ? CONDITION.ifAbsent : CONDITION.any;

/**
 * The set group's parameters, and the rows its statement is written for. `metadataOf` gives a
 * put's metadata parameters (its `jsonb` text and whether it is given).
 */
export function setGroupParams(
  group: readonly PlannedBatch[],
  metadataOf: (op: BatchOperation, value: Buffer) => [string | null, boolean],
): { params: unknown[]; puts: number; deletes: number } {
  const puts: unknown[] = [];
  const deletes: unknown[] = [];
  group.forEach((batch, g) => {
    batch.operations.forEach((op, i) => {
      if (op.type === 'delete') {
        deletes.push(g + 1, i + 1, orderKey(op.key));
        return;
      }
      const value = batch.values[i]!;
      const version = batch.versions[i] ?? null;
      puts.push(g + 1, i + 1, conditionOf(op, version), orderKey(op.key), op.key, value, version, ...metadataOf(op, value));
    });
  });
  const putRowsGiven = puts.length / PUT_COLUMNS;
  const deleteRowsGiven = deletes.length / DELETE_COLUMNS;
  const putRows = groupRows(putRowsGiven);
  const deleteRows = groupRows(deleteRowsGiven);
  const params = puts;
  for (let r = putRowsGiven; r < putRows; r++) for (let c = 0; c < PUT_COLUMNS; c++) params.push(null);
  params.push(...deletes);
  for (let r = deleteRowsGiven; r < deleteRows; r++) for (let c = 0; c < DELETE_COLUMNS; c++) params.push(null);
  return { params, puts: putRows, deletes: deleteRows };
}

/** A row of the set group's answer: a put that wrote, or a key deleted. */
export interface SetGroupRow {
  group: number;
  op: number;
  version: string | null;
  existed: boolean | null;
}

/**
 * The set group's answer as the batches function's rows: a batch whose first put did not write
 * failed there, else a row an operation.
 */
export function setGroupAnswer(group: readonly PlannedBatch[], rows: readonly SetGroupRow[]): BatchRow[] {
  const found = new Map<string, SetGroupRow>();
  for (const row of rows) found.set(`${row.group}:${row.op}`, row);
  const out: BatchRow[] = [];
  group.forEach((batch, g) => {
    const place = g + 1;
    if (!found.has(`${place}:1`)) {
      out.push({ group: place, op: null, version: null, existed: null, failed: 1 });
      return;
    }
    batch.operations.forEach((op, i) => {
      const row = found.get(`${place}:${i + 1}`);
      out.push(
        op.type === 'delete'
          ? { group: place, op: i + 1, version: null, existed: row !== undefined, failed: null }
          : { group: place, op: i + 1, version: row?.version ?? null, existed: null, failed: null },
      );
    });
  });
  return out;
}
