import { assertMoveArguments, moveTargetExists } from '../../contract/move.js';
import { assertKey } from '../keys.js';
import { readyPool } from './migrate.js';
import { orderKey } from './order-key.js';
import { run, type PostgresStoreState } from './store-state.js';

/**
 * `move`: one UPDATE of the row's key (the value is not sent again), in one statement that also
 * says whether the target was taken. A target inserted by another session between the check and
 * the update makes the update fail on the primary key: `checkpoint_conflict` too.
 */
export async function moveObject(state: PostgresStoreState, from: string, to: string): Promise<boolean> {
  assertMoveArguments(from, to, 'postgresStorage.move');
  assertKey(from);
  assertKey(to);
  const p = await readyPool(state);
  const res = await run<{ moved: number; taken: boolean }>(
    state,
    p,
    state.settings.sql.move,
    [orderKey(from), orderKey(to), to],
    'move',
    from,
  );
  const row = res.rows[0]!;
  if (row.moved > 0) return true;
  if (row.taken) throw moveTargetExists(to);
  return false;
}
