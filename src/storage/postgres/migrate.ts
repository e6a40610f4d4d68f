import type { PostgresPool } from './driver.js';
import { toStoreError } from './errors.js';
import { config } from './options.js';
import { isCurrentMetadataFunction } from './metadata-index.js';
import { SCHEMA_MARKER } from './sql.js';
import { getPool, run, type PostgresStoreState } from './store-state.js';

/** Creates or upgrades the table, its sequence and its batch function, in one transaction. */
export async function migrateNow(state: PostgresStoreState): Promise<void> {
  const p = await getPool(state);
  let client;
  try {
    client = await p.connect();
  } catch (err) {
    throw toStoreError(err, 'migrate', state.scrubber);
  }
  let failed: unknown;
  try {
    state.roundTrips++;
    await client.query('BEGIN');
    // One lock for every savepoint store: concurrent first uses (even of different tables in
    // one schema) would otherwise race in CREATE SCHEMA / CREATE TABLE IF NOT EXISTS.
    state.roundTrips++;
    await client.query("SELECT pg_advisory_xact_lock(hashtext('savepoint.migrate'))");
    for (const statement of state.settings.sql.migrate) {
      state.roundTrips++;
      await client.query(statement);
    }
    state.roundTrips++;
    await client.query('COMMIT');
  } catch (err) {
    failed = err;
    await client.query('ROLLBACK').catch(() => undefined);
    throw toStoreError(err, 'migrate', state.scrubber);
  } finally {
    client.release(failed instanceof Error ? failed : undefined);
  }
}

interface MarkerRow {
  marker: string | null;
  function_marker: string | null;
  metadata_written: boolean;
  old_server: boolean;
  conflict_function: boolean;
}

/** The pool, once the table is known to exist at the current layout (checked once per store). */
export function readyPool(state: PostgresStoreState): Promise<PostgresPool> {
  state.ready ??= (async () => {
    const sql = state.settings.sql;
    const p = await getPool(state);
    const params = [sql.table, sql.metadata.functionSignature, sql.conflictFunction];
    const marker = (await run<MarkerRow>(state, p, sql.readMarker, params, 'setup')).rows[0];
    const layoutCurrent = marker?.marker === SCHEMA_MARKER;
    if (!layoutCurrent && !state.settings.autoMigrate)
      throw config(`table ${sql.table} is missing or at another layout: run migrate() (autoMigrate is false)`, 'autoMigrate');
    // An older metadata function computes the same column, only slower, and a generated column is
    // computed by the server: both are upgraded when the store may migrate, else kept and served.
    // (Before PostgreSQL 13 the column stays generated: the migration cannot change it.)
    const written = marker?.metadata_written === true;
    const oldServer = marker?.old_server === true;
    const conflictFunction = marker?.conflict_function === true;
    const upToDate = isCurrentMetadataFunction(marker?.function_marker) && (written || oldServer) && conflictFunction;
    const current = layoutCurrent && (upToDate || !state.settings.autoMigrate);
    if (!current) await migrateNow(state);
    // The statements that send the metadata only where the column takes it: a migration made it so, unless the server is older.
    const sendsMetadata = current ? written : !oldServer;
    // A migration made the conflict function; a table kept as it is without it gets the pairs' `WITH` form.
    const raises = !current || conflictFunction;
    state.puts = !sendsMetadata ? sql.putsComputed : raises ? sql.puts : sql.putsWithoutConflictFunction;
    state.checked = current ? 'current' : 'migrated';
    state.checkedPool = p;
    return p;
  })().catch((err: unknown) => {
    state.ready = undefined; // a failed setup (server down) is tried again by the next call
    throw err;
  });
  return state.ready;
}

/** `write` on the pool once the table is checked: at once when it was (no promise to wait for), else after the check. */
export function withReadyPool<T>(state: PostgresStoreState, write: (p: PostgresPool) => Promise<T>): Promise<T> {
  return state.checkedPool !== undefined ? write(state.checkedPool) : readyPool(state).then(write);
}

/**
 * A read made beside the store's first-use layout check rather than after it: a replica's first
 * call waits for one round trip, not two. Its answer is given only once the check passed (a table
 * at another layout is refused as before: a read changed nothing), and the read runs again when
 * the check created or upgraded the table, as its first answer may predate that. Writes wait for
 * the check ({@link readyPool}).
 */
export async function readChecked<T>(state: PostgresStoreState, read: (p: PostgresPool) => Promise<T>): Promise<T> {
  if (state.checked) return read(await readyPool(state));
  const checking = readyPool(state);
  const early = getPool(state).then(read);
  // Looked at once the check passed; not at all when it failed (its failure is the answer then).
  early.catch(() => undefined);
  const p = await checking;
  return state.checked === 'migrated' ? read(p) : early;
}
