import { canonicalJson } from '../../codec/canonical-json.js';
import { assertObjectArgument } from '../../contract/arguments.js';
import type { JsonObject } from '../../contract/json.js';
import type { StorageEntry } from '../../contract/storage.js';
import { assertPrefix } from '../keys.js';
import { listEntries } from './list.js';
import { readyPool } from './migrate.js';
import { keyOf, prefixRange } from './order-key.js';
import { closedError, guard, run, type PostgresStoreState } from './store-state.js';

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

/**
 * `listWhereMetadata` (contract/metadata-listing.ts): the keys under `prefix` in code-unit order,
 * less those whose metadata column is known and does not contain `contains`; one page per round trip.
 */
export async function* listEntriesWhereMetadata(
  state: PostgresStoreState,
  prefix: string,
  contains: JsonObject,
): AsyncGenerator<StorageEntry> {
  if (state.closed) throw closedError(state);
  assertPrefix(prefix);
  assertObjectArgument(contains, 'listWhereMetadata', 'contains');
  const filter = containsText(contains);
  if (filter === undefined) {
    yield* listEntries(state, prefix);
    return;
  }
  const { sql, pageSize } = state.settings;
  const p = await guard(state, () => readyPool(state));
  const { lower, upper } = prefixRange(prefix);
  let from = lower;
  for (;;) {
    if (state.closed) throw closedError(state);
    const res = upper
      ? await run<ListRow>(state, p, sql.metadata.listRange, [from, filter, pageSize, upper], 'list')
      : await run<ListRow>(state, p, sql.metadata.listFrom, [from, filter, pageSize], 'list');
    for (const row of res.rows) yield { key: keyOf(row.key_order), version: row.version, size: Number(row.size) };
    if (res.rows.length < pageSize) return;
    from = Buffer.concat([res.rows[res.rows.length - 1]!.key_order, Buffer.of(0)]);
  }
}
