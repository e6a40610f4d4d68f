import type { StorageEntry } from '../../contract/storage.js';
import { assertPrefix } from '../keys.js';
import { readyPool } from './migrate.js';
import { keyOf, prefixRange } from './order-key.js';
import { closedError, guard, runPlannedEach, type PostgresStoreState } from './store-state.js';

interface ListRow {
  key_order: Buffer;
  version: string;
  size: number;
}

/** The keys under `prefix` in code-unit order, one page (`listPageSize` rows) per round trip. */
export async function* listEntries(state: PostgresStoreState, prefix: string): AsyncGenerator<StorageEntry> {
  if (state.closed) throw closedError(state);
  assertPrefix(prefix);
  const { sql, pageSize } = state.settings;
  const p = await guard(state, () => readyPool(state));
  const { lower, upper } = prefixRange(prefix);
  let from = lower;
  for (;;) {
    if (state.closed) throw closedError(state);
    const res = upper
      ? await runPlannedEach<ListRow>(state, p, sql.listRange, [from, upper, pageSize], 'list')
      : await runPlannedEach<ListRow>(state, p, sql.listFrom, [from, pageSize], 'list');
    for (const row of res.rows) yield { key: keyOf(row.key_order), version: row.version, size: Number(row.size) };
    if (res.rows.length < pageSize) return;
    // The smallest stored form after the last row's: it, followed by a zero byte.
    from = Buffer.concat([res.rows[res.rows.length - 1]!.key_order, Buffer.of(0)]);
  }
}
