import type { BatchOperation, BatchOutcome, PutResult } from '../../contract/storage.js';
import { assertBatchOperations } from '../batch-operation.js';
import { promiseOf } from '../promise-of.js';
import type { PostgresPool } from './driver.js';
import { conditionFailed } from '../../contract/errors.js';
import { checkSize, versionParam } from './checks.js';
import { knownMetadataJson, metadataParams } from './client-metadata.js';
import { toStoreError } from './errors.js';
import { withReadyPool } from './migrate.js';
import { orderKey } from './order-key.js';
import { queryNamed } from './named-statement.js';
import { setGroupAnswer, setGroupLength, setGroupParams, type SetGroupRow } from './set-group.js';
import { ifAbsentOf, isCheckedPair, isPair, type BatchRow } from './batch-shape.js';
import { CONFLICT_SQLSTATE, DELETES_AS_PARAMETERS } from './sql.js';
import type { CheckpointError } from '../../contract/errors.js';
import type { PlannedBatch, PostgresStoreState, QueuedBatch } from './store-state.js';

/*
 * Group commit. A store keeps up to `state.writeSlots` write statements in flight (store-state.ts:
 * its pool's connections, less two for reads). A write that finds a slot free is sent at once: a
 * lone put as its own statement, a batch as the batch function. One that arrives while every slot
 * is taken waits, and the writes waiting go together in the next statement (the batches function:
 * one transaction and one WAL flush for many callers, each applied or refused on its own), as the
 * fs journal's shared write. Fewer slots than connections would keep callers waiting while
 * connections sit idle (8 threads on a pool of 10 had ~4 of them idle with two slots).
 */

/** Batches one statement carries at most (each is a subtransaction on the server). */
const BATCHES_PER_STATEMENT = 32;

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
    if (v === undefined) throw conditionFailed(op.key, 'version does not match');
    versions.push(v);
  }
  return versions;
}

/** `batch()`: every operation in one transaction, alone or with other callers' batches in one statement. */
export function runBatch(state: PostgresStoreState, operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
  assertBatchOperations(operations, (op) => {
    if (op.type === 'put') checkSize(state.settings.maxValueBytes, op.key, op.bytes);
  });
  if (operations.length === 0) return Promise.resolve([]);
  const versions = versionsOf(operations);
  // Copied now, before any await: the caller may reuse its buffers.
  const values = operations.map((op) => (op.type === 'put' ? Buffer.from(op.bytes) : null));
  if (state.batchQueue.length === 0 && state.writeStatements < state.writeSlots) return sendAlone(state, { operations, versions, values });
  return new Promise((resolve, reject) => {
    state.batchQueue.push({ operations, versions, values, resolve, reject });
    sendWaiting(state);
  });
}

/** A batch sent at once, a write slot being free and no batch waiting: its own statement, no queue. */
function sendAlone(state: PostgresStoreState, batch: PlannedBatch): Promise<BatchOutcome[]> {
  return inWriteSlot(
    state,
    () => answerGroup(state, [batch]),
    ([answer]) => {
      if (!Array.isArray(answer)) throw answer!;
      return answer;
    },
  );
}

/**
 * A lone put: `alone` (its own statement) when a write slot is free and no batch waits, else a
 * one-operation batch queued with the others, so that it goes with them in one statement.
 */
export function runLonePut(
  state: PostgresStoreState,
  operation: BatchOperation & { type: 'put' },
  alone: () => Promise<PutResult>,
): Promise<PutResult> {
  if (state.batchQueue.length > 0 || state.writeStatements >= state.writeSlots)
    return runBatch(state, [operation]).then(([outcome]) => ({ version: (outcome as { version: string }).version }));
  return inWriteSlot(state, alone, (result) => result);
}

/**
 * `send` holding a write slot, taken now and given back (letting a waiting batch out) when it
 * settles, its answer through `take` in the same step; a throw of `send` rejects.
 */
function inWriteSlot<R, T>(state: PostgresStoreState, send: () => Promise<R>, take: (answer: R) => T): Promise<T> {
  state.writeStatements++;
  const freeSlot = (): void => {
    state.writeStatements--;
    sendWaiting(state);
  };
  return promiseOf(send).then(
    (answer) => {
      freeSlot();
      return take(answer);
    },
    (err: unknown) => {
      freeSlot();
      throw err;
    },
  );
}

/**
 * Sends the waiting batches, as many statements as the free write slots let out (see
 * {@link nextGroup}).
 */
function sendWaiting(state: PostgresStoreState): void {
  while (state.batchQueue.length > 0 && state.writeStatements < state.writeSlots) {
    const { group, set } = nextGroup(state.batchQueue);
    void inWriteSlot(
      state,
      () => sendGroup(state, group, set),
      () => undefined,
    );
  }
}

/**
 * The batches the next statement takes from the front of `queue`: lone puts and pairs, each key
 * named once, as one plain statement (`set`: set-group.ts), else up to
 * {@link BATCHES_PER_STATEMENT} through the batches function.
 */
function nextGroup(queue: QueuedBatch[]): { group: QueuedBatch[]; set: boolean } {
  const set = setGroupLength(queue, BATCHES_PER_STATEMENT);
  return { group: queue.splice(0, set > 0 ? set : BATCHES_PER_STATEMENT), set: set > 0 };
}

/** What one statement answered a batch of its group: the batch's outcomes, or the error that refuses it. */
type BatchAnswer = BatchOutcome[] | CheckpointError;

/** One statement for waiting batches (`set`: a set group); each caller's promise settled by its answer. */
async function sendGroup(state: PostgresStoreState, group: readonly QueuedBatch[], set: boolean): Promise<void> {
  const answers = await answerGroup(state, group, set);
  group.forEach((b, g) => {
    const answer = answers[g]!;
    if (Array.isArray(answer)) b.resolve(answer);
    else b.reject(answer);
  });
}

/** One statement for `group`: the batch function for a lone batch, the batches function or a set group for several; each batch's answer. */
function answerGroup(state: PostgresStoreState, group: readonly PlannedBatch[], set = false): Promise<BatchAnswer[]> {
  return promiseOf(() => query(state, group, set)).then(
    (res) => answersOf(group, res.rows),
    (err: unknown) => {
      const e = err as { code?: unknown; message?: unknown };
      // The lone batch function's failed condition names its operation; others fail every batch of the statement.
      const op = group.length === 1 && e?.code === CONFLICT_SQLSTATE ? group[0]!.operations[Number(e.message) - 1] : undefined;
      const failure = op ? conflictOf(op) : toStoreError(err, 'batch', state.scrubber);
      return group.map(() => failure);
    },
  );
}

/** Each batch's answer from the rows of its group's statement. */
function answersOf(group: readonly PlannedBatch[], rows: readonly BatchRow[]): BatchAnswer[] {
  const byGroup = group.map((): BatchRow[] => []);
  for (const row of rows) byGroup[group.length === 1 ? 0 : row.group! - 1]?.push(row);
  return group.map((b, g) => {
    const mine = byGroup[g]!;
    const failed = mine.find((r) => r.failed !== null && r.failed !== undefined);
    return failed ? conflictOf(b.operations[failed.failed! - 1]!) : outcomes(b.operations, mine);
  });
}

/**
 * The statement of `group`, once the table is checked: a pair as its plain statement, a set group
 * (`set`) as its own where the table's layout has one, else the batch or batches function.
 */
function query(state: PostgresStoreState, group: readonly PlannedBatch[], set: boolean): Promise<{ rows: BatchRow[] }> {
  return withReadyPool(state, (p) =>
    set && state.puts.group
      ? querySetGroup(state, p, group, state.puts.group)
      : group.length === 1 && isPair(group[0]!.operations)
        ? queryPair(state, p, group[0]!)
        : group.length === 1 && isCheckedPair(group[0]!.operations)
          ? queryCheckedPair(state, p, group[0]!)
          : queryFunction(state, p, group),
  );
}

function queryFunction(state: PostgresStoreState, p: PostgresPool, group: readonly PlannedBatch[]): Promise<{ rows: BatchRow[] }> {
  const all = group.flatMap((b) => b.operations);
  const params: unknown[] = [
    all.map((op) => op.type),
    all.map((op) => orderKey(op.key)),
    all.map((op) => op.key),
    group.flatMap((b) => b.values),
    group.flatMap((b) => b.versions),
    all.map(ifAbsentOf),
  ];
  const puts = state.puts; // known once the table is checked
  if (puts.sendsMetadata) params.push(...metadataArrays(group));
  state.roundTrips++;
  if (group.length === 1) return queryNamed<BatchRow>(state, p, puts.batch, params);
  let end = 0;
  params.push(group.map((b) => (end += b.operations.length)));
  return queryNamed<BatchRow>(state, p, puts.batches, params);
}

/** A set group (set-group.ts) as its statement, answered as the batches function answers. */
function querySetGroup(
  state: PostgresStoreState,
  p: PostgresPool,
  group: readonly PlannedBatch[],
  statement: (puts: number, deletes: number) => string,
): Promise<{ rows: BatchRow[] }> {
  const { params, puts, deletes } = setGroupParams(group, putMetadataParams);
  state.roundTrips++;
  return queryNamed<SetGroupRow>(state, p, statement(puts, deletes), params).then((res) => ({ rows: setGroupAnswer(group, res.rows) }));
}

/** Each operation's metadata (jsonb text) and whether it is given, as two arrays: null for deletes and checks. */
function metadataArrays(group: readonly PlannedBatch[]): [(string | null)[], (boolean | null)[]] {
  const metas: (string | null)[] = [];
  const given: (boolean | null)[] = [];
  for (const b of group)
    b.operations.forEach((op, i) => {
      const [json, isGiven] = op.type === 'put' ? putMetadataParams(op, b.values[i]!) : [null, null];
      metas.push(json);
      given.push(isGiven);
    });
  return [metas, given];
}

/** The metadata parameters of a batch's put `op`, whose bytes the store copied as `value`. */
function putMetadataParams(op: BatchOperation, value: Buffer): [string | null, boolean] {
  return op.type === 'put' ? metadataParams(op.key, value, knownMetadataJson(op.bytes, op.knownMetadata)) : [null, false];
}

/** What a pair's statement answers: each put's new version (the first null when its condition failed), the deleted keys' places. */
interface PairRow {
  first: string | null;
  second: string | null;
  gone?: number[];
  /** A checked pair's: the third put's version, whether the check and the third's version held, whether the created key was there before. */
  third?: string | null;
  checked?: boolean;
  indexed?: boolean;
  present?: boolean;
}

/**
 * The parameters a pair's statements start with, plain or checked: each of the first two puts'
 * key order, key and value, then with the metadata each one's metadata and flag.
 */
function pairParams(puts: PostgresStoreState['puts'], batch: PlannedBatch): unknown[] {
  const [first, second] = batch.operations as [BatchOperation, BatchOperation];
  const params: unknown[] = [orderKey(first.key), first.key, batch.values[0], orderKey(second.key), second.key, batch.values[1]];
  if (puts.sendsMetadata) params.push(...putMetadataParams(first, batch.values[0]!), ...putMetadataParams(second, batch.values[1]!));
  return params;
}

/** A pair (see {@link isPair}) as one plain statement: what the batch function would answer, without calling it. */
function queryPair(state: PostgresStoreState, p: PostgresPool, batch: PlannedBatch): Promise<{ rows: BatchRow[] }> {
  const operations = batch.operations;
  const first = operations[0]!;
  const deletes = operations.length > 2;
  const puts = state.puts; // known once the table is checked (query waited for it)
  const count = operations.length - 2;
  const sql = deletes ? puts.pair.withDeletes(count) : puts.pair;
  const version = batch.versions[0] ?? null;
  const params = pairParams(puts, batch);
  if (version !== null) params.push(version);
  if (deletes) {
    const keys = operations.slice(2).map((op) => orderKey(op.key));
    if (count > DELETES_AS_PARAMETERS) params.push(keys);
    else params.push(...keys);
  }
  const text = version !== null ? sql.ifVersion : ifAbsentOf(first) ? sql.ifAbsent : sql.any;
  state.roundTrips++;
  if (puts.pairRaises) return queryNamed<RaisingPairRow>(state, p, text, params).then((res) => pairRows(operations, pairRowOf(res.rows)));
  return queryNamed<PairRow>(state, p, text, params).then((res) => pairRows(operations, res.rows[0]!));
}

/** A row of a pair's statement that raises on a failed condition (raising-pair-sql.ts): a put's. */
interface RaisingPairRow {
  first: boolean;
  version: string;
  gone?: number[];
}

/** Those rows as the `WITH` form's one row (the statement answers only when the condition held). */
function pairRowOf(rows: readonly RaisingPairRow[]): PairRow {
  const [a, b] = rows as [RaisingPairRow, RaisingPairRow];
  const [first, second] = a.first ? [a, b] : [b, a];
  return { first: first.version, second: second.version, gone: a.gone };
}

/** A checked pair (see {@link isCheckedPair}) as one plain statement. */
function queryCheckedPair(state: PostgresStoreState, p: PostgresPool, batch: PlannedBatch): Promise<{ rows: BatchRow[] }> {
  const [, , check, index] = batch.operations as [BatchOperation, BatchOperation, BatchOperation, BatchOperation | undefined];
  const puts = state.puts; // known once the table is checked (query waited for it)
  const params = pairParams(puts, batch);
  params.push(orderKey(check.key), batch.versions[2]);
  if (index) {
    params.push(orderKey(index.key), index.key, batch.values[3]);
    if (puts.sendsMetadata) params.push(...putMetadataParams(index, batch.values[3]!));
    params.push(batch.versions[3]);
  }
  state.roundTrips++;
  const text = index ? puts.pair.checked.indexed : puts.pair.checked.plain;
  return queryNamed<PairRow>(state, p, text, params).then((res) => checkedPairRows(res.rows[0]!, index !== undefined));
}

/**
 * The row of a checked pair's statement as the batch function's rows. The function stops at the
 * first failed condition in the batch's order: the create when its key was there, else the check,
 * else the index's version.
 */
function checkedPairRows(row: PairRow, indexed: boolean): { rows: BatchRow[] } {
  if (row.first === null) {
    const failed = row.present ? 1 : row.checked === false ? 3 : indexed && row.indexed === false ? 4 : 1;
    return { rows: [{ op: null, version: null, existed: null, failed }] };
  }
  const rows: BatchRow[] = [
    { op: 1, version: row.first, existed: null },
    { op: 2, version: row.second, existed: null },
    { op: 3, version: null, existed: null },
  ];
  if (indexed) rows.push({ op: 4, version: row.third ?? null, existed: null });
  return { rows };
}

/** The row of a pair's statement as the batch function's rows. */
function pairRows(operations: readonly BatchOperation[], row: PairRow): { rows: BatchRow[] } {
  const deletes = operations.length > 2;
  if (row.first === null) return { rows: [{ op: null, version: null, existed: null, failed: 1 }] };
  const rows: BatchRow[] = [
    { op: 1, version: row.first, existed: null },
    { op: 2, version: row.second, existed: null },
  ];
  if (deletes) {
    const gone = new Set(row.gone);
    for (let i = 3; i <= operations.length; i++) rows.push({ op: i, version: null, existed: gone.has(i - 2) });
  }
  return { rows };
}

/** The conflict of an operation whose condition failed, in the words a lone put or delete uses. */
function conflictOf(op: BatchOperation) {
  if (op.type === 'check') return conditionFailed(op.key, 'checked condition does not hold');
  return conditionFailed(op.key, ifAbsentOf(op) ? 'key exists' : 'version changed or key is gone');
}

function outcomes(operations: readonly BatchOperation[], rows: BatchRow[]): BatchOutcome[] {
  const sorted = [...rows].sort((a, b) => a.op! - b.op!);
  return operations.map((op, i): BatchOutcome => {
    const row = sorted[i];
    if (op.type === 'put') return { type: 'put', key: op.key, version: row!.version! };
    if (op.type === 'delete') return { type: 'delete', key: op.key, existed: row!.existed === true };
    return { type: 'check', key: op.key };
  });
}
