import { type AbsentLinked, type LinkedValues, type ListedObject, type MemberLink, type ReadLinks } from '../../contract/linked-read.js';
import { assertLinkedReadArguments } from '../linked-read-arguments.js';
import { toStoreError } from './errors.js';
import { readChecked } from './migrate.js';
import { LINKED_READ_LIMITS } from './linked-read-sql.js';
import { queryNamed } from './named-statement.js';
import { getObject } from './objects.js';
import { keyOf, orderKey, packedKeysOf, prefixRange } from './order-key.js';
import type { StorageEntry } from '../../contract/storage.js';
import type { PostgresPool } from './driver.js';
import type { PostgresStoreState } from './store-state.js';

/**
 * `getLinked` (contract/linked-read.ts): one statement (linked-read-sql.ts); a value the server
 * will not parse in place is read alone, its links left to the caller, as is a part that has more
 * rows than the statement reads in place (LINKED_READ_LIMITS: it then reads one row more).
 */

interface LinkedRow {
  part: number;
  key_order: Buffer | null;
  value: Buffer | null;
  version: string | null;
  g: string | null;
  l: string | null;
  size: number | null;
}

/** The parameters of one link: member, stored `before`, stored `after` (and, for a prefix, the upper bound of `after`). */
function linkParams(link: MemberLink | undefined, prefix: boolean): unknown[] {
  if (!link) return prefix ? [null, null, null, null] : [null, null, null];
  const params: unknown[] = [link.member, orderKey(link.before), orderKey(link.after)];
  if (prefix) params.push(link.after === '' ? null : (prefixRange(link.after).upper ?? null));
  return params;
}

/** The stored bounds of a prefix read in place (`keys`, `first`, `keysIfAbsent`), or NULLs: not read (no upper bound, which no key prefix lacks in practice, is left to the caller). */
function underParams(prefix: string | undefined): [Buffer | null, Buffer | null] {
  if (prefix === undefined) return [null, null];
  const range = prefixRange(prefix);
  return range.upper === undefined ? [null, null] : [range.lower, range.upper];
}

/** PostgreSQL's data exceptions (class 22: text jsonb refuses, say): the value is not parsed in place, its links left to the caller. */
const isDataException = (err: unknown): boolean =>
  typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('22');

export async function getLinkedObjects(
  state: PostgresStoreState,
  key: string,
  links: ReadLinks,
): Promise<LinkedValues | AbsentLinked | undefined> {
  assertLinkedReadArguments(key, links, 'getLinked');
  const params = linkedReadParams(key, links);
  return readChecked(state, (p) => readLinked(state, p, key, links, params));
}

/** The statement's parameters (linked-read-sql.ts) for `key` and `links`, checked before. */
export function linkedReadParams(key: string, links: ReadLinks): unknown[] {
  return [
    orderKey(key),
    ...linkParams(links.get, false),
    ...linkParams(links.list, true),
    ...underParams(links.keys),
    ...underParams(links.first?.prefix),
    links.first?.count ?? null,
    ...underParams(links.keysIfAbsent),
    ...underParams(links.entries),
  ];
}

/** The statement's answer, or the value alone when the server will not parse it in place. */
async function readLinked(
  state: PostgresStoreState,
  p: PostgresPool,
  key: string,
  links: ReadLinks,
  params: unknown[],
): Promise<LinkedValues | AbsentLinked | undefined> {
  let rows: LinkedRow[];
  state.roundTrips++;
  try {
    rows = (await queryNamed<LinkedRow>(state, p, state.settings.sql.linkedRead, params)).rows;
  } catch (err) {
    if (!isDataException(err)) throw toStoreError(err, 'get', state.scrubber, { key });
    const value = await getObject(state, key);
    return value && { value };
  }
  return linkedValues(rows, links, {
    keys: params[9] !== null,
    first: params[11] !== null,
    ifAbsent: params[14] !== null,
    entries: params[16] !== null,
  });
}

/** Which parts under given prefixes the statement read (a prefix without an upper bound is left to the caller). */
interface PartsRead {
  readonly keys: boolean;
  readonly first: boolean;
  readonly ifAbsent: boolean;
  readonly entries: boolean;
}

/** The answer from the statement's rows. */
function linkedValues(rows: readonly LinkedRow[], links: ReadLinks, read: PartsRead): LinkedValues | AbsentLinked | undefined {
  const head = rows[0];
  if (!head || head.part !== 0) {
    const prefix = links.keysIfAbsent;
    if (!read.ifAbsent || prefix === undefined) return undefined;
    const keys = packedPart(rows, 5, prefix);
    return keys.length > LINKED_READ_LIMITS.keys ? undefined : { absent: { prefix, keys } };
  }
  const value = { bytes: new Uint8Array(head.value!), version: head.version! };
  const under = underParts(rows, links, read);
  let got: LinkedValues['got'];
  if (links.get && head.g !== null) {
    const row = rows.find((r) => r.part === 1);
    got = {
      key: `${links.get.before}${head.g}${links.get.after}`,
      object: row && { bytes: new Uint8Array(row.value!), version: row.version! },
    };
  }
  let listed: LinkedValues['listed'];
  if (links.list && head.l !== null) {
    const objects: ListedObject[] = [];
    for (const row of rows)
      if (row.part === 2) objects.push({ key: keyOf(row.key_order!), bytes: new Uint8Array(row.value!), version: row.version! });
    if (objects.length <= LINKED_READ_LIMITS.listed) listed = { prefix: `${links.list.before}${head.l}${links.list.after}`, objects };
  }
  return { value, ...(got ? { got } : {}), ...(listed ? { listed } : {}), ...under };
}

/** The keys of packed part `part` (3 or 5), under `prefix`: none when the part has no row (no key under it). */
function packedPart(rows: readonly LinkedRow[], part: number, prefix: string): string[] {
  const row = rows.find((r) => r.part === part);
  return row?.value ? packedKeysOf(prefix, row.value) : [];
}

/** Parts 3, 4 and 6 of the rows: the keys under `links.keys`, the first rows under `links.first.prefix`, the entries under `links.entries`. */
function underParts(rows: readonly LinkedRow[], links: ReadLinks, read: PartsRead): Pick<LinkedValues, 'keys' | 'entries' | 'first'> {
  const keys = links.keys === undefined ? [] : packedPart(rows, 3, links.keys);
  const first: ListedObject[] = [];
  const entries: StorageEntry[] = [];
  for (const row of rows) {
    if (row.part === 4) first.push({ key: keyOf(row.key_order!), bytes: new Uint8Array(row.value!), version: row.version! });
    else if (row.part === 6) entries.push({ key: keyOf(row.key_order!), version: row.version!, size: Number(row.size) });
  }
  const L = LINKED_READ_LIMITS;
  return {
    ...(read.keys && links.keys !== undefined && keys.length <= L.keys ? { keys: { prefix: links.keys, keys } } : {}),
    ...(read.entries && links.entries !== undefined && entries.length <= L.entries ? { entries: { prefix: links.entries, entries } } : {}),
    ...(read.first && links.first ? { first: { prefix: links.first.prefix, objects: first } } : {}),
  };
}
