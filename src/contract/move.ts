import { assertStorageArgument, assertStringArgument } from './arguments.js';
import { CheckpointError } from './errors.js';
import type { StorageAdapter } from './storage.js';

/**
 * Move: an optional capability a store may declare (`capabilities.move`) by carrying `move`.
 * `move(from, to)` puts the value stored under `from` under `to` and removes it from `from`, in
 * one step of the backend (a rename, an UPDATE of the key) instead of a read, a put and a delete.
 *
 * - `to` must be absent: when it holds a value, `checkpoint_conflict` and nothing changes.
 * - `from` absent: false, nothing changes. Else true once the move is durable.
 * - Crash safety: at no moment, crash included, is the value under neither key. A store whose
 *   move is atomic (rename(2), one statement) leaves it under exactly one; a store may leave it
 *   under both after a crash (a hard link made, the old name not yet removed), never under none.
 * - `to`'s bytes are `from`'s, byte for byte; its version is a version of `to` as a put would give.
 *
 * A wrapper that binds a value to its key (encryptedStorage seals the key name as associated
 * data) must not declare it: the moved bytes would no longer open under their new key.
 * Callers use {@link moveOf}, and fall back to get + put + delete on a store without it.
 *
 * A store that declares move may also carry `moveMany(moves)`: each move as `move` would do it,
 * committed together where the backend can (on fs's journal, one record for all of them instead
 * of one each). Its answer is one boolean per move: true once moved and durable; false when
 * nothing changed for that move (its source absent, its target taken, or its source changed
 * again and again meanwhile), which `move` answers with false or `checkpoint_conflict`. The
 * crash rule is move's, move by move; when the call fails, each move may have been made or not.
 * Callers use {@link moveManyOf}.
 */
export interface MovableStorage extends StorageAdapter {
  move(from: string, to: string): Promise<boolean>;
  moveMany?(moves: readonly KeyMove[]): Promise<boolean[]>;
}

/** One move of a {@link MovableStorage.moveMany}: the value under `from` to go under `to`. */
export interface KeyMove {
  readonly from: string;
  readonly to: string;
}

/** The store's move, when it declares one: else undefined. */
export function moveOf(store: StorageAdapter): MovableStorage['move'] | undefined {
  assertStorageArgument(store, 'moveOf', 'store');
  const move = (store as Partial<MovableStorage>).move;
  return store.capabilities?.move === true && typeof move === 'function' ? move.bind(store) : undefined;
}

/** The store's `moveMany`, when it declares move and carries one: else undefined (callers move one at a time). */
export function moveManyOf(store: StorageAdapter): NonNullable<MovableStorage['moveMany']> | undefined {
  assertStorageArgument(store, 'moveManyOf', 'store');
  const moveMany = (store as Partial<MovableStorage>).moveMany;
  return store.capabilities?.move === true && typeof moveMany === 'function' ? moveMany.bind(store) : undefined;
}

/** Checks the arguments of a move (every store calls it first, then checks both keys as its put does): two distinct strings. */
export function assertMoveArguments(from: unknown, to: unknown, fn: string): void {
  assertStringArgument(from, fn, 'from');
  assertStringArgument(to, fn, 'to');
  if (from === to)
    throw new CheckpointError('checkpoint_config_invalid', `${fn}: from and to are the same key`, { details: { function: fn } });
}

/** Checks the argument of a `moveMany`: an array of moves as {@link assertMoveArguments} checks each, no key named twice. */
export function assertMoveManyArguments(moves: unknown, fn: string): asserts moves is readonly KeyMove[] {
  if (!Array.isArray(moves))
    throw new CheckpointError('checkpoint_config_invalid', `${fn}: moves must be an array`, { details: { function: fn } });
  const named = new Set<string>();
  for (const m of moves as unknown[]) {
    const { from, to } = (typeof m === 'object' && m !== null ? m : {}) as Partial<Record<keyof KeyMove, unknown>>;
    assertMoveArguments(from, to, fn);
    for (const key of [from as string, to as string]) {
      if (named.has(key))
        throw new CheckpointError('checkpoint_config_invalid', `${fn}: key ${key} is named by two moves`, { details: { function: fn } });
      named.add(key);
    }
  }
}

/** The error of a move whose target holds a value. */
export const moveTargetExists = (to: string): CheckpointError =>
  new CheckpointError('checkpoint_conflict', `move to ${to} failed: key exists`, { details: { key: to } });
