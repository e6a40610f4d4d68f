import type {
  BatchOperation,
  BatchOutcome,
  DeleteOptions,
  PutOptions,
  PutResult,
  StorageEntry,
  StoredObject,
  MultiGetStorage,
} from '../../contract/storage.js';
import type { JsonObject } from '../../contract/json.js';
import type { MovableStorage } from '../../contract/move.js';
import type { AbsentLinked, LinkedRead, LinkedValues, ReadLinks } from '../../contract/linked-read.js';
import type { MetadataListing, MetadataListingOptions } from '../../contract/metadata-listing.js';
import { getLinkedObjects } from './linked-read.js';
import { runBatch } from './batch.js';
import { listEntries } from './list.js';
import { listEntriesWhereMetadata } from './metadata-list.js';
import { migrateNow } from './migrate.js';
import { deleteObject, getObject, getObjects, putObject } from './objects.js';
import { moveObject } from './move.js';
import { postgresSettings, type PostgresStorageOptions } from './options.js';
import { closeStore, guard, newStoreState } from './store-state.js';
import { preloadPg } from './driver.js';

export { POSTGRES_DEFAULT_MAX_VALUE_BYTES, POSTGRES_MAX_VALUE_BYTES, type PostgresStorageOptions } from './options.js';

/** Counters of a {@link PostgresStorage}. */
export interface PostgresStorageStats {
  /** Statements sent to the server, setup included: one per get, put and delete, one per list page, one per batch or per group of batches sent together. */
  readonly roundTrips: number;
}

/** A StorageAdapter over one PostgreSQL table, with a metadata listing (contract/metadata-listing.ts), a linked read (contract/linked-read.ts), move and a multi-get. */
export interface PostgresStorage extends MetadataListing, LinkedRead, MovableStorage, MultiGetStorage {
  readonly schema: string;
  readonly table: string;
  /** Creates or upgrades the table, its version sequence and its batch function. Idempotent; safe to run from many processes at once. */
  migrate(): Promise<void>;
  /** The DDL `migrate()` runs, in order (for DBAs who apply schema changes themselves). */
  migrationSql(): readonly string[];
  stats(): PostgresStorageStats;
  /** Always present: every batch is one transaction in one round trip. */
  batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]>;
}

/**
 * A store in one PostgreSQL table: keys and bytes, a version from a sequence on every write,
 * listing in code-unit order from the primary-key index, conditional writes checked in the
 * statement that writes, and atomic batches in one round trip (a PL/pgSQL function, one
 * transaction; writes that wait while every write slot is taken go together in one statement,
 * each applied or refused alone). Conditions hold across processes and machines (`crossProcessConditional`),
 * so the writer's run lock works between hosts.
 *
 * @example
 * ```ts
 * import { createWriter } from 'savepoint';
 * import { postgresStorage } from 'savepoint/postgres';
 *
 * const storage = postgresStorage({ connectionString: process.env.DATABASE_URL! });
 * const writer = createWriter({ storage, profile, runId: 'run-1' });
 * ```
 */
export function postgresStorage(options: PostgresStorageOptions): PostgresStorage {
  const state = newStoreState(postgresSettings(options));
  if (!state.settings.givenPool) preloadPg();
  const { schema, table, sql, maxValueBytes } = state.settings;
  return {
    name: 'postgres',
    schema,
    table,
    capabilities: {
      atomicBatch: true,
      crossProcessConditional: true,
      maxValueBytes,
      metadataListing: true,
      linkedRead: true,
      move: true,
      multiGet: true,
      versionsPerWrite: true,
    },
    migrate: () => guard(state, () => migrateNow(state)),
    migrationSql: () => [...sql.migrate],
    stats: () => ({ roundTrips: state.roundTrips }),
    get: (key: string): Promise<StoredObject | undefined> => guard(state, () => getObject(state, key)),
    getMany: (keys: readonly string[]): Promise<(StoredObject | undefined)[]> => guard(state, () => getObjects(state, keys)),
    put: (key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> =>
      guard(state, () => putObject(state, key, bytes, opts)),
    delete: (key: string, opts: DeleteOptions = {}): Promise<boolean> => guard(state, () => deleteObject(state, key, opts)),
    list: (prefix: string): AsyncIterable<StorageEntry> => listEntries(state, prefix),
    listWhereMetadata: (prefix: string, contains: JsonObject, opts?: MetadataListingOptions): AsyncIterable<StorageEntry> =>
      listEntriesWhereMetadata(state, prefix, contains, opts),
    getLinked: (key: string, links: ReadLinks): Promise<LinkedValues | AbsentLinked | undefined> =>
      guard(state, () => getLinkedObjects(state, key, links)),
    move: (from: string, to: string): Promise<boolean> => guard(state, () => moveObject(state, from, to)),
    batch: (operations: readonly BatchOperation[]): Promise<BatchOutcome[]> => guard(state, () => runBatch(state, operations)),
    close: (): Promise<void> => closeStore(state),
  };
}
