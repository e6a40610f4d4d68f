import type { BigIntStats } from 'node:fs';
import fsp from 'node:fs/promises';
import type { OpenedDir } from '../dir.js';
import { versionOf } from '../io.js';
import { lstatIfAny } from '../lock.js';
import { keyPath, occupiedRefused, symlinkRefused } from '../paths.js';
import type { DirCache } from './dirs.js';
import type { KeyState } from './planned.js';
import type { JournalState } from './state.js';

/*
 * What a key holds, as a group's conditions see it: learned under this hold of the lock,
 * acknowledged and not yet applied, absent from its directory's listing, or stat'ed.
 */

/** The file at a key now: absent, or a regular file (anything else is refused). */
export async function stateOf(od: OpenedDir | undefined, key: string): Promise<KeyState & { st?: BigIntStats }> {
  if (!od) return { exists: false };
  const st = await lstatIfAny(od.dir.at(keyPath(key).base));
  if (!st) return { exists: false };
  if (st.isSymbolicLink()) throw symlinkRefused(key);
  if (!st.isFile()) throw occupiedRefused(key);
  return { exists: true, version: versionOf(st), mtimeNs: st.mtimeNs, st };
}

/** The names in a key's directory, listed once per cache. */
export function namesIn(cache: DirCache, names: Map<string, Promise<Set<string>>>, od: OpenedDir): Promise<Set<string>> {
  const rel = od.dir.rel;
  let listed = names.get(rel);
  if (!listed) {
    listed = fsp.readdir(od.dir.prefix).then((entries) => {
      const set = new Set(entries);
      cache.listed.set(rel, set);
      return set;
    });
    names.set(rel, listed);
  }
  return listed;
}

/** What the key holds as learned under this hold (`states`), or acknowledged and not yet applied; else undefined. */
export function learned(s: JournalState, states: Map<string, KeyState> | undefined, key: string): KeyState | undefined {
  return states?.get(key) ?? s.pending.get(key)?.after;
}
/** Remembers under this hold that `key` holds nothing, and says so. */
function absentNow(states: Map<string, KeyState>, key: string): KeyState {
  const absent: KeyState = { exists: false };
  states.set(key, absent);
  return absent;
}

/** What the key holds when it is known without a call (learned under this hold, acknowledged, or absent from its directory's completed listing); else undefined. */
export function stateNow(
  s: JournalState,
  states: Map<string, KeyState>,
  od: OpenedDir,
  key: string,
  base: string,
  cache: DirCache,
): KeyState | undefined {
  const known = learned(s, states, key);
  if (known || !cache.names) return known;
  const names = cache.listed.get(od.dir.rel);
  return !names || names.has(base) ? undefined : absentNow(states, key);
}

/** What a key in a directory known missing holds: what this hold wrote, else nothing. */
export function stateMissing(s: JournalState, states: Map<string, KeyState>, key: string): KeyState {
  return learned(s, states, key) ?? absentNow(states, key);
}

/** What the key holds: learned earlier under this hold (or acknowledged and not yet applied), absent from its directory's listing, or stat'ed now (and remembered). */
export async function knownState(
  s: JournalState,
  states: Map<string, KeyState>,
  od: OpenedDir | undefined,
  key: string,
  cache: DirCache,
): Promise<KeyState> {
  const known = learned(s, states, key);
  if (known) return known;
  if (od && cache.names) {
    // Listed once per directory (a failed listing leaves it unlisted: the key is stat'ed below).
    await namesIn(cache, cache.names, od).catch(() => undefined);
    const now = stateNow(s, states, od, key, keyPath(key).base, cache);
    if (now) return now;
  }
  const { exists, version, mtimeNs } = await stateOf(od, key);
  const state: KeyState = exists ? { exists, version: version!, mtimeNs: mtimeNs! } : { exists };
  // A batch names each key once and batches are prepared one after another: no race on the entry.
  states.set(key, state);
  return state;
}
