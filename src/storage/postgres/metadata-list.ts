import { canonicalJson } from '../../codec/canonical-json.js';
import { assertObjectArgument, assertOptionalOptionsArgument } from '../../contract/arguments.js';
import type { JsonObject } from '../../contract/json.js';
import type { MetadataListingOptions } from '../../contract/metadata-listing.js';
import type { StorageEntry } from '../../contract/storage.js';
import { assertPrefix } from '../keys.js';
import { listEntries } from './list.js';
import { readyPool } from './migrate.js';
import { keyOf, prefixRange } from './order-key.js';
import { closedError, guard, runPlannedEach, type PostgresStoreState } from './store-state.js';

interface ListRow {
  key_order: Buffer;
  version: string;
  size: number;
}

/** Text jsonb refuses (a NUL, a lone surrogate): such a filter is answered by the plain listing. */
const NOT_JSONB = /\\u0000|\\ud[89a-f]/i;

/** The filter as jsonb's input text, or undefined when jsonb cannot take it (or it is no JSON): then nothing is left out. */
function containsText(contains: JsonObject): string | undefined {
  try {
    const text = canonicalJson(contains);
    return NOT_JSONB.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

/** Rows of the first page: a caller after the newest few matches stops early, and the server scans no further than it needs. */
const FIRST_PAGE = 16;

/**
 * `listWhereMetadata` (contract/metadata-listing.ts): the keys under `prefix` in code-unit order
 * (or its reverse), less those whose metadata column is known and does not contain `contains`;
 * one page per round trip, pages growing fourfold from {@link FIRST_PAGE} to `listPageSize`.
 */
export async function* listEntriesWhereMetadata(
  state: PostgresStoreState,
  prefix: string,
  contains: JsonObject,
  options: MetadataListingOptions = {},
): AsyncGenerator<StorageEntry> {
  if (state.closed) throw closedError(state);
  assertPrefix(prefix);
  assertObjectArgument(contains, 'listWhereMetadata', 'contains');
  assertOptionalOptionsArgument(options, 'listWhereMetadata');
  const filter = containsText(contains);
  const descending = options.descending === true;
  if (filter === undefined) {
    yield* descending ? descendingEntries(listEntries(state, prefix)) : listEntries(state, prefix);
    return;
  }
  const { sql, pageSize } = state.settings;
  const p = await guard(state, () => readyPool(state));
  const { lower, upper } = prefixRange(prefix);
  let cursor = descending ? upper : lower;
  for (let size = Math.min(FIRST_PAGE, pageSize); ; size = Math.min(size * 4, pageSize)) {
    if (state.closed) throw closedError(state);
    const res = descending
      ? cursor
        ? await runPlannedEach<ListRow>(state, p, sql.metadata.listDescendingRange, [lower, filter, size, cursor], 'list')
        : await runPlannedEach<ListRow>(state, p, sql.metadata.listDescendingFrom, [lower, filter, size], 'list')
      : upper
        ? await runPlannedEach<ListRow>(state, p, sql.metadata.listRange, [cursor, filter, size, upper], 'list')
        : await runPlannedEach<ListRow>(state, p, sql.metadata.listFrom, [cursor, filter, size], 'list');
    for (const row of res.rows) yield { key: keyOf(row.key_order), version: row.version, size: Number(row.size) };
    if (res.rows.length < size) return;
    const last = res.rows[res.rows.length - 1]!.key_order;
    // Ascending: the smallest stored form after the last row's (it, then a zero byte); descending: below the last row's.
    cursor = descending ? last : Buffer.concat([last, Buffer.of(0)]);
  }
}

/** A plain listing, newest (last) key first: read whole, then reversed. */
async function* descendingEntries(entries: AsyncIterable<StorageEntry>): AsyncGenerator<StorageEntry> {
  const all: StorageEntry[] = [];
  for await (const entry of entries) all.push(entry);
  for (let i = all.length - 1; i >= 0; i--) yield all[i]!;
}
