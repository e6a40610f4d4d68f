import type { DeleteOptions, PutOptions, PutResult, StoredObject } from '../../contract/storage.js';
import { CheckpointError, conditionFailed } from '../../contract/errors.js';
import { assertKey } from '../keys.js';
import { runLonePut } from './batch.js';
import { checkSize, versionParam } from './checks.js';
import { knownMetadataJson, metadataParams } from './client-metadata.js';
import { readChecked, readyPool, withReadyPool } from './migrate.js';
import { orderKey } from './order-key.js';
import { run, type PostgresStoreState } from './store-state.js';

// get, put and delete of one key: one statement each, its condition checked in the statement that writes.

interface ObjectRow {
  value: Buffer;
  version: string;
}

export async function getObject(state: PostgresStoreState, key: string): Promise<StoredObject | undefined> {
  assertKey(key);
  const params = [orderKey(key)];
  const res = await readChecked(state, (p) => run<ObjectRow>(state, p, state.settings.sql.get, params, 'get', key));
  const row = res.rows[0];
  return row ? { bytes: new Uint8Array(row.value), version: row.version } : undefined;
}

interface ManyRow extends ObjectRow {
  at: number;
}

/** Keys one `getMany` statement names at most: a larger call is several statements. */
const KEYS_PER_STATEMENT = 1000;

/** `getMany`: the rows of many keys in one statement (a join of the keys with the primary key), answered in the order asked. */
export async function getObjects(state: PostgresStoreState, keys: readonly string[]): Promise<(StoredObject | undefined)[]> {
  if (!Array.isArray(keys)) throw new CheckpointError('checkpoint_config_invalid', 'postgresStorage.getMany: keys must be an array');
  for (const key of keys) assertKey(key);
  const found: (StoredObject | undefined)[] = new Array<StoredObject | undefined>(keys.length).fill(undefined);
  for (let from = 0; from < keys.length; from += KEYS_PER_STATEMENT) {
    const params = [keys.slice(from, from + KEYS_PER_STATEMENT).map(orderKey)];
    const res = await readChecked(state, (p) => run<ManyRow>(state, p, state.settings.sql.getMany, params, 'get'));
    for (const row of res.rows) found[from + row.at - 1] = { bytes: new Uint8Array(row.value), version: row.version };
  }
  return found;
}

export function putObject(state: PostgresStoreState, key: string, bytes: Uint8Array, opts: PutOptions): Promise<PutResult> {
  assertKey(key);
  checkSize(state.settings.maxValueBytes, key, bytes);
  // A put is a write like a batch's: sent at once while a write slot is free, else with the writes waiting (batch.ts).
  return runLonePut(
    state,
    { type: 'put', key, bytes, ifAbsent: opts.ifAbsent, ifVersion: opts.ifVersion, knownMetadata: opts.knownMetadata },
    () => putAlone(state, key, bytes, opts),
  );
}

/** A put as its own statement. Plain functions and `then`s, no async layers: a put is half of a LangGraph superstep's statements. */
function putAlone(state: PostgresStoreState, key: string, bytes: Uint8Array, opts: PutOptions): Promise<PutResult> {
  const value = Buffer.from(bytes); // copied now: the caller may reuse its buffer
  return withReadyPool(state, (p) => {
    const sql = state.puts; // known once the table is checked
    const params: unknown[] = [orderKey(key), key, value];
    const conditional = opts.ifVersion !== undefined;
    if (conditional) {
      const v = typeof opts.ifVersion === 'string' && !opts.ifAbsent ? versionParam(opts.ifVersion) : undefined;
      if (v === undefined) throw conditionFailed(key, 'version does not match');
      params.push(v);
    }
    if (sql.sendsMetadata) params.push(...metadataParams(key, value, knownMetadataJson(bytes, opts.knownMetadata)));
    const text = conditional ? sql.putIfVersion : opts.ifAbsent ? sql.putIfAbsent : sql.putAny;
    return run<{ version: string }>(state, p, text, params, 'put', key).then((res) => {
      const row = res.rows[0];
      if (!row) throw conditionFailed(key, conditional ? 'version changed or key is gone' : 'key exists');
      return { version: row.version };
    });
  });
}

export async function deleteObject(state: PostgresStoreState, key: string, opts: DeleteOptions): Promise<boolean> {
  const sql = state.settings.sql;
  assertKey(key);
  const p = await readyPool(state);
  if (opts.ifVersion !== undefined) {
    const v = typeof opts.ifVersion === 'string' ? versionParam(opts.ifVersion) : undefined;
    if (v === undefined) throw conditionFailed(key, 'version does not match');
    const res = await run(state, p, sql.deleteIfVersion, [orderKey(key), v], 'delete', key);
    if (res.rows.length === 0) throw conditionFailed(key, 'version changed or key is gone');
    return true;
  }
  const res = await run(state, p, sql.deleteAny, [orderKey(key)], 'delete', key);
  return res.rows.length > 0;
}
