import { assertObjectArgument, assertOptionalOptionsArgument, assertStringArgument } from './arguments.js';
import type { StorageAdapter, StoredObject } from './storage.js';

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
 * The parts of an answer are not promised to be one snapshot (they are on PostgreSQL, one
 * statement): a caller checks what it depends on (a document's id against the pointer) as it
 * would after separate reads.
 *
 * A wrapper that changes the bytes it stores (encryptedStorage) must not declare it: the inner
 * store cannot read members of ciphertext.
 */
export interface LinkedRead extends StorageAdapter {
  getLinked(key: string, links: ReadLinks): Promise<LinkedValues | undefined>;
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
}

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
}

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
}

async function listedUnder(store: StorageAdapter, prefix: string): Promise<ListedObject[]> {
  const keys: string[] = [];
  for await (const entry of store.list(prefix)) keys.push(entry.key);
  const objects = await Promise.all(keys.map((key) => store.get(key)));
  const listed: ListedObject[] = [];
  // A key deleted between the listing and its read is left out, as if listed after.
  for (const [i, object] of objects.entries()) if (object) listed.push({ key: keys[i]!, bytes: object.bytes, version: object.version });
  return listed;
}

/**
 * `key`'s value and what its links name: through the store's linked read when it declares one
 * (one round trip on PostgreSQL), each link the store left unfollowed read after it; on any
 * other store, the value, then the links' reads at once.
 */
export async function readLinked(store: StorageAdapter, key: string, links: ReadLinks): Promise<LinkedValues | undefined> {
  assertReadLinks(links, 'readLinked');
  const answer: LinkedValues | undefined = hasLinkedRead(store)
    ? await store.getLinked(key, links)
    : await store.get(key).then((value) => value && { value });
  if (!answer) return undefined;
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
    value: answer.value,
    ...(getKey !== undefined && got ? { got } : {}),
    ...(prefix !== undefined && listed ? { listed } : {}),
  };
}
