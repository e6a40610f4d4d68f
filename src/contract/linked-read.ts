import { assertObjectArgument, assertOptionalOptionsArgument, assertStringArgument } from './arguments.js';
import { CheckpointError } from './errors.js';
import { listAll, readMany, type StorageAdapter, type StorageEntry, type StoredObject } from './storage.js';

/**
 * Linked read: an optional capability a store may declare (`capabilities.linkedRead`) by
 * carrying `getLinked`. It reads a small JSON value (a pointer, as a LangGraph run's head) and,
 * in the same round trip, the key a member of that value names and the values under the prefix
 * another member names. A reader that must learn "what does the pointer say, and what is there"
 * pays one round trip instead of three (postgresStorage answers it in one statement).
 *
 * A link is a key made of a member of the value read: `before` + the member's text + `after`.
 * The member's text ({@link memberText}) is the member's value when the value read is a JSON
 * object (UTF-8) whose member `member` is a string of 1–128 characters from `[A-Za-z0-9_-]`, or
 * the decimal form of an integer from 0 to 10^15 − 1; otherwise the link names no key.
 *
 * `getLinked(key, links)` answers undefined when `key` is absent; else its value, and for each
 * link it followed, the key (or prefix) it built and what is stored there: `got` (the object, or
 * undefined when absent) and `listed` (every key under the prefix, in `list` order, with its
 * value). A store may leave a link unfollowed (omit `got` / `listed`) when it cannot read the
 * member the way {@link memberText} does (a value it will not parse in place, as one with
 * JSON escapes); it never follows a link to another key than {@link memberText}'s.
 * Callers use {@link readLinked}, which completes what the store left with plain reads, and
 * reads step by step on a store without the capability.
 *
 * Three more parts name their prefix outright: `keys` (every key under it, without values: a
 * listing by name), `entries` (what `list` yields under it: each key with its version and size,
 * without values) and `first` (the first `count` keys under it, with their values). A store may
 * leave any of them unread (omit `keys` / `entries` / `first`); {@link readLinked} then lists
 * (and reads) them after.
 *
 * One part is read only when the value is absent: `keysIfAbsent` (every key under a given
 * prefix). A caller that lists a folder when its pointer is missing (a LangGraph thread without a
 * head: a new thread has no key at all) learns what is there in the same round trip. The answer
 * is then {@link AbsentLinked}; a store that does not read it answers undefined, as for any absent
 * value, and {@link readLinked} lists the prefix after.
 *
 * The parts of an answer are not promised to be one snapshot (they are on PostgreSQL, one
 * statement): a caller checks what it depends on (a document's id against the pointer) as it
 * would after separate reads.
 *
 * A wrapper that changes the bytes it stores (encryptedStorage) must not declare it: the inner
 * store cannot read members of ciphertext.
 */
export interface LinkedRead extends StorageAdapter {
  getLinked(key: string, links: ReadLinks): Promise<LinkedValues | AbsentLinked | undefined>;
}

/** A key built from a member of the value read: `before` + {@link memberText} + `after`. */
export interface MemberLink {
  readonly member: string;
  readonly before: string;
  readonly after: string;
}

/** What {@link LinkedRead.getLinked} reads besides the value. */
export interface ReadLinks {
  /** Read the key this link names. */
  readonly get?: MemberLink;
  /** List the prefix this link names, each key with its value (meant for a small folder: every value is read). */
  readonly list?: MemberLink;
  /** List the keys under this prefix (given, not taken from the value), without their values. */
  readonly keys?: string;
  /** List this prefix (given) as `list` does: each key with its version and size, without values. */
  readonly entries?: string;
  /** The first `count` keys under `prefix` (given), in `list` order, with their values. */
  readonly first?: FirstUnder;
  /** Only when the value is absent: list the keys under this prefix (given), without their values. */
  readonly keysIfAbsent?: string;
}

/** The first few keys under a prefix, with their values (see {@link ReadLinks.first}). */
export interface FirstUnder {
  readonly prefix: string;
  /** 1 to {@link FIRST_UNDER_MAX}. */
  readonly count: number;
}

/** Most keys {@link ReadLinks.first} may ask for. */
export const FIRST_UNDER_MAX = 256;

/** One key under a listed prefix, with its value. */
export interface ListedObject extends StoredObject {
  readonly key: string;
}

/** The answer of {@link LinkedRead.getLinked}: the value, and each link followed. */
export interface LinkedValues {
  readonly value: StoredObject;
  /** The key `links.get` named, and its object (undefined when absent). Absent when the link was not followed. */
  readonly got?: { readonly key: string; readonly object: StoredObject | undefined };
  /** The prefix `links.list` named, and the keys under it with their values. Absent when the link was not followed. */
  readonly listed?: { readonly prefix: string; readonly objects: readonly ListedObject[] };
  /** The keys under `links.keys`, in `list` order. Absent when the store did not read them. */
  readonly keys?: { readonly prefix: string; readonly keys: readonly string[] };
  /** What `list(links.entries)` yields, in its order. Absent when the store did not read them. */
  readonly entries?: { readonly prefix: string; readonly entries: readonly StorageEntry[] };
  /** The first keys under `links.first.prefix` with their values, in `list` order. Absent when the store did not read them. */
  readonly first?: { readonly prefix: string; readonly objects: readonly ListedObject[] };
  /** Only on {@link AbsentLinked}. */
  readonly absent?: never;
}

/** The answer of {@link LinkedRead.getLinked} for an absent value, when the store listed `links.keysIfAbsent`. */
export interface AbsentLinked {
  /** The keys under `links.keysIfAbsent`, in `list` order (none: nothing is stored there either). */
  readonly absent: { readonly prefix: string; readonly keys: readonly string[] };
  // None of a present value's parts: they read as undefined on either answer.
  readonly value?: never;
  readonly got?: never;
  readonly listed?: never;
  readonly keys?: never;
  readonly entries?: never;
  readonly first?: never;
}

/** Whether a linked read's answer is {@link AbsentLinked} (the value absent, a prefix listed instead). */
export const isAbsentLinked = (answer: LinkedValues | AbsentLinked | undefined): answer is AbsentLinked => answer?.absent !== undefined;

const MEMBER_STRING = /^[A-Za-z0-9_-]{1,128}$/;
const MEMBER_INTEGER_LIMIT = 1e15;
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The text a link takes from member `member` of `bytes` (see {@link LinkedRead}), or undefined when it names no key. */
export function memberText(bytes: Uint8Array, member: string): string | undefined {
  return memberTextOf(pointerOf(bytes), member);
}

/** The JSON object `bytes` holds (UTF-8), parsed once for all its links ({@link memberTextOf}); undefined for anything else. */
export function pointerOf(bytes: Uint8Array): Readonly<Record<string, unknown>> | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
  return doc === null || typeof doc !== 'object' || Array.isArray(doc) ? undefined : (doc as Record<string, unknown>);
}

/** {@link memberText} of a pointer already parsed by {@link pointerOf}. */
export function memberTextOf(pointer: Readonly<Record<string, unknown>> | undefined, member: string): string | undefined {
  if (pointer === undefined || !Object.hasOwn(pointer, member)) return undefined;
  const value = pointer[member];
  if (typeof value === 'string') return MEMBER_STRING.test(value) ? value : undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < MEMBER_INTEGER_LIMIT) return String(value);
  return undefined;
}

/** The key (or prefix) `link` names in `bytes`, or undefined. */
export function linkedKey(bytes: Uint8Array, link: MemberLink): string | undefined {
  return linkedKeyOf(pointerOf(bytes), link);
}

/** {@link linkedKey} of a pointer already parsed by {@link pointerOf}. */
export function linkedKeyOf(pointer: Readonly<Record<string, unknown>> | undefined, link: MemberLink): string | undefined {
  const text = memberTextOf(pointer, link.member);
  return text === undefined ? undefined : `${link.before}${text}${link.after}`;
}

/** Whether the store declares a linked read and carries `getLinked`. */
export function hasLinkedRead(store: StorageAdapter): store is LinkedRead {
  return store.capabilities?.linkedRead === true && typeof (store as Partial<LinkedRead>).getLinked === 'function';
}

/** The store's linked read, when it declares one: else undefined (callers use {@link readLinked}, which reads step by step). */
export function linkedReadOf(store: StorageAdapter): LinkedRead['getLinked'] | undefined {
  return hasLinkedRead(store) ? store.getLinked.bind(store) : undefined;
}

/** Checks the arguments of a linked read (stores call it too, before they build SQL from them). */
export function assertReadLinks(links: unknown, fn: string): asserts links is ReadLinks {
  assertOptionalOptionsArgument(links, fn);
  for (const name of ['get', 'list'] as const) {
    const link = (links as ReadLinks | undefined)?.[name];
    if (link === undefined) continue;
    assertObjectArgument(link, fn, name);
    assertStringArgument(link.member, fn, `${name}.member`);
    assertStringArgument(link.before, fn, `${name}.before`);
    assertStringArgument(link.after, fn, `${name}.after`);
  }
  const { keys, entries, first, keysIfAbsent } = (links ?? {}) as ReadLinks;
  if (keys !== undefined) assertStringArgument(keys, fn, 'keys');
  if (entries !== undefined) assertStringArgument(entries, fn, 'entries');
  if (keysIfAbsent !== undefined) assertStringArgument(keysIfAbsent, fn, 'keysIfAbsent');
  if (first === undefined) return;
  assertObjectArgument(first, fn, 'first');
  assertStringArgument(first.prefix, fn, 'first.prefix');
  if (!Number.isInteger(first.count) || first.count < 1 || first.count > FIRST_UNDER_MAX)
    throw new CheckpointError('checkpoint_config_invalid', `${fn}: first.count must be an integer from 1 to ${FIRST_UNDER_MAX}`, {
      details: { function: fn },
    });
}

/** The keys under `prefix` (the first `count` of them), each with its value, in `list` order. */
async function listedUnder(store: StorageAdapter, prefix: string, count = Infinity): Promise<ListedObject[]> {
  const keys: string[] = [];
  for await (const entry of store.list(prefix)) {
    keys.push(entry.key);
    if (keys.length >= count) break;
  }
  const objects = await readMany(store, keys);
  const listed: ListedObject[] = [];
  // A key deleted between the listing and its read is left out, as if listed after.
  for (const [i, object] of objects.entries()) if (object) listed.push({ key: keys[i]!, bytes: object.bytes, version: object.version });
  return listed;
}

/**
 * `key`'s value and what its links name: through the store's linked read when it declares one
 * (one round trip on PostgreSQL), each link the store left unfollowed read after it; on any
 * other store, the value, then the links' reads at once. An absent value with `keysIfAbsent`
 * asked answers {@link AbsentLinked}. `completeUnder: false`: the parts under given prefixes
 * (`keys`, `entries`, `first`, `keysIfAbsent`) only as the store's linked read gave them (a caller that asks
 * for them only where they come in the same round trip, and reads them its own way otherwise).
 */
export function readLinked(
  store: StorageAdapter,
  key: string,
  links: ReadLinks & { readonly keysIfAbsent?: undefined },
  completeUnder?: boolean,
): Promise<LinkedValues | undefined>;
export function readLinked(
  store: StorageAdapter,
  key: string,
  links: ReadLinks,
  completeUnder?: boolean,
): Promise<LinkedValues | AbsentLinked | undefined>;
export async function readLinked(
  store: StorageAdapter,
  key: string,
  links: ReadLinks,
  completeUnder = true,
): Promise<LinkedValues | AbsentLinked | undefined> {
  assertReadLinks(links, 'readLinked');
  const answer: LinkedValues | AbsentLinked | undefined = hasLinkedRead(store)
    ? await store.getLinked(key, links)
    : await store.get(key).then((value) => value && { value });
  if (isAbsentLinked(answer)) return answer;
  if (!answer) {
    const prefix = links.keysIfAbsent;
    if (!completeUnder || prefix === undefined) return undefined;
    return { absent: { prefix, keys: (await listAll(store, prefix)).map((e) => e.key) } };
  }
  const linked = await completeLinks(store, links, answer);
  return completeUnder ? completeUnderParts(store, links, linked) : linked;
}

/** The answer with the parts under given prefixes (`keys`, `entries`, `first`) the store left, read now (all at once). */
async function completeUnderParts(store: StorageAdapter, links: ReadLinks, answer: LinkedValues): Promise<LinkedValues> {
  const keysPrefix = links.keys;
  const entriesPrefix = links.entries;
  const first = links.first;
  const needKeys = keysPrefix !== undefined && answer.keys?.prefix !== keysPrefix;
  const needEntries = entriesPrefix !== undefined && answer.entries?.prefix !== entriesPrefix;
  const needFirst = first !== undefined && answer.first?.prefix !== first.prefix;
  if (!needKeys && !needEntries && !needFirst) return answer;
  const [keys, entries, firstObjects] = await Promise.all([
    needKeys ? listAll(store, keysPrefix).then((listed) => listed.map((e) => e.key)) : undefined,
    needEntries ? listAll(store, entriesPrefix) : undefined,
    needFirst ? listedUnder(store, first.prefix, first.count) : undefined,
  ]);
  return {
    ...answer,
    ...(keys ? { keys: { prefix: keysPrefix!, keys } } : {}),
    ...(entries ? { entries: { prefix: entriesPrefix!, entries } } : {}),
    ...(firstObjects ? { first: { prefix: first!.prefix, objects: firstObjects } } : {}),
  };
}

/** The answer with the member links (`get`, `list`) the store left unfollowed, read now. */
async function completeLinks(store: StorageAdapter, links: ReadLinks, answer: LinkedValues): Promise<LinkedValues> {
  if ((!links.get || answer.got) && (!links.list || answer.listed)) return answer; // every link followed by the store
  // A part the store followed names the contract's key (it never follows another): the value is parsed only for the parts it left.
  const pointer = (links.get && !answer.got) || (links.list && !answer.listed) ? pointerOf(answer.value.bytes) : undefined;
  const getKey = links.get && (answer.got?.key ?? linkedKeyOf(pointer, links.get));
  const prefix = links.list && (answer.listed?.prefix ?? linkedKeyOf(pointer, links.list));
  const [got, listed] = await Promise.all([
    getKey === undefined || answer.got?.key === getKey ? answer.got : store.get(getKey).then((object) => ({ key: getKey, object })),
    prefix === undefined || answer.listed?.prefix === prefix
      ? answer.listed
      : listedUnder(store, prefix).then((objects) => ({ prefix, objects })),
  ]);
  return {
    ...answer,
    ...(getKey !== undefined && got ? { got } : {}),
    ...(prefix !== undefined && listed ? { listed } : {}),
  };
}
