import {
  isAbsentLinked,
  linkedKey,
  linkedReadOf,
  readLinked,
  type AbsentLinked,
  type LinkedValues,
  type ReadLinks,
} from '../../contract/linked-read.js';
import { listAll, type StorageAdapter } from '../../contract/storage.js';
import { equal, equalJson, ok, sameBytes, utf8 } from './check.js';
import { listedKeys } from './key-listing.js';
import type { SuiteContext } from './context.js';

const LINKS = {
  get: { member: 'id', before: 'lr/doc/', after: '.json' },
  list: { member: 'seq', before: 'lr/parts/', after: '/' },
} satisfies ReadLinks;

/** A store's answer where `keysIfAbsent` was not asked: never {@link AbsentLinked}. */
function notAbsent(answer: LinkedValues | AbsentLinked | undefined, what: string): LinkedValues | undefined {
  ok(!isAbsentLinked(answer), `${what}: answered as absent though keysIfAbsent was not asked`);
  return answer as LinkedValues | undefined;
}

/** Stored beside the pointer: the documents and parts its members may name, and keys just outside the listed prefix. */
const AROUND: Readonly<Record<string, string>> = {
  'lr/doc/abc.json': 'document abc',
  'lr/doc/abd.json': 'document abd',
  'lr/doc/7.json': 'document 7',
  'lr/parts/7/a': 'part a',
  'lr/parts/7/b': 'part b',
  'lr/parts/70/x': 'not under parts/7/',
  'lr/parts/7-/y': 'not under parts/7/ either',
  'lr/parts/8/z': 'part of 8',
};

/**
 * Pointer values, each with the key `get` names and the prefix `list` names under the contract's
 * rule (undefined: the link names nothing). Plain ASCII pointers first: a store that declares
 * the capability must follow their links itself.
 */
const POINTERS: readonly { readonly text: string | Uint8Array; readonly get?: string; readonly list?: string; readonly plain?: true }[] = [
  { text: '{"id":"abc","seq":7}', get: 'lr/doc/abc.json', list: 'lr/parts/7/', plain: true },
  { text: '{ "seq" : 8 , "id" : "zzz" }', get: 'lr/doc/zzz.json', list: 'lr/parts/8/', plain: true },
  { text: '{"id":"abc","seq":9,"other":[1,{"id":"x"}]}', get: 'lr/doc/abc.json', list: 'lr/parts/9/', plain: true },
  { text: '{"id":"abc","id":"abd","seq":7.0}', get: 'lr/doc/abd.json', list: 'lr/parts/7/' },
  { text: '{"id":7,"seq":"7"}', get: 'lr/doc/7.json', list: 'lr/parts/7/' },
  { text: '{"id":"\\u0061bc","seq":1e1}', get: 'lr/doc/abc.json', list: 'lr/parts/10/' },
  { text: '{"id":"a/b","seq":-1}' },
  { text: '{"id":"","seq":7.5}' },
  { text: '{"id":"é","seq":1e15}' },
  { text: '{"id":null,"seq":true}' },
  { text: '{"id":{"x":1},"seq":[7]}' },
  { text: '{"ID":"abc","Seq":7}' },
  { text: '["abc",7]' },
  { text: '"abc"' },
  { text: '{"id":"abc"' },
  { text: 'not json' },
  { text: Uint8Array.of(0x7b, 0xff, 0xfe, 0x7d) },
];

async function storeAround(adapter: StorageAdapter): Promise<void> {
  for (const [key, text] of Object.entries(AROUND)) await adapter.put(key, utf8(text));
}

/** Checks an answer's links against the store's own reads of what they name. */
async function checkLinks(adapter: StorageAdapter, answer: LinkedValues, what: string): Promise<void> {
  if (answer.got) {
    const direct = await adapter.get(answer.got.key);
    equal(answer.got.object?.version, direct?.version, `${what}: version of the linked key ${answer.got.key}`);
    if (direct) sameBytes(answer.got.object?.bytes, direct.bytes, `${what}: bytes of the linked key ${answer.got.key}`);
  }
  if (answer.listed) {
    const expected: { key: string; version: string }[] = [];
    for await (const entry of adapter.list(answer.listed.prefix)) expected.push({ key: entry.key, version: entry.version });
    equalJson(
      answer.listed.objects.map((o) => ({ key: o.key, version: o.version })),
      expected,
      `${what}: keys listed under ${answer.listed.prefix}`,
    );
    for (const object of answer.listed.objects)
      sameBytes(object.bytes, (await adapter.get(object.key))!.bytes, `${what}: bytes of ${object.key}`);
  }
}

/** Checks the parts under given prefixes (`keys`, `entries`, `first`) an answer holds against the store's own listing and reads. */
async function checkUnderParts(adapter: StorageAdapter, answer: LinkedValues, links: ReadLinks, what: string): Promise<void> {
  if (answer.keys) equalJson(answer.keys.keys, await listedKeys(adapter, links.keys!), `${what}: the keys under ${links.keys}`);
  if (answer.entries)
    equalJson(
      answer.entries.entries.map((e) => ({ key: e.key, version: e.version, size: e.size })),
      (await listAll(adapter, links.entries!)).map((e) => ({ key: e.key, version: e.version, size: e.size })),
      `${what}: the entries under ${links.entries}, as list yields them`,
    );
  if (answer.first) {
    const expected = (await listAll(adapter, links.first!.prefix)).slice(0, links.first!.count);
    equalJson(
      answer.first.objects.map((o) => ({ key: o.key, version: o.version })),
      expected.map((e) => ({ key: e.key, version: e.version })),
      `${what}: the first ${links.first!.count} under ${links.first!.prefix}`,
    );
    for (const object of answer.first.objects)
      sameBytes(object.bytes, (await adapter.get(object.key))!.bytes, `${what}: bytes of ${object.key}`);
  }
}

/**
 * Linked read (contract/linked-read.ts): `readLinked` answers every store the same (through the
 * store's `getLinked` when it declares one, else step by step), and a store's own `getLinked`
 * follows a link only to the key the contract's rule names.
 */
export function linkedReadTests(ctx: SuiteContext): void {
  ctx.group('linked read', () => {
    ctx.test('readLinked: the value, the key one member names and the folder another names', async (adapter) => {
      await storeAround(adapter);
      for (const [i, pointer] of POINTERS.entries()) {
        const bytes = typeof pointer.text === 'string' ? utf8(pointer.text) : pointer.text;
        const what = `pointer ${i} (${typeof pointer.text === 'string' ? pointer.text : 'bytes'})`;
        equal(linkedKey(bytes, LINKS.get!), pointer.get, `${what}: the contract's key`);
        await adapter.put('lr/ptr.json', bytes);
        const answer = await readLinked(adapter, 'lr/ptr.json', LINKS);
        ok(answer, `${what}: readLinked found no value`);
        sameBytes(answer.value.bytes, bytes, `${what}: value`);
        equal(answer.got?.key, pointer.get, `${what}: linked key`);
        equal(answer.listed?.prefix, pointer.list, `${what}: listed prefix`);
        await checkLinks(adapter, answer, what);
      }
      const expected = await readLinked(adapter, 'lr/ptr.json', LINKS);
      equal(expected?.got, undefined, 'a pointer that names nothing: no linked key');
      equal(await readLinked(adapter, 'lr/absent.json', LINKS), undefined, 'an absent key');
    });

    ctx.test('readLinked: the parts of a folder in list order, none beyond its prefix', async (adapter) => {
      await storeAround(adapter);
      await adapter.put('lr/ptr.json', utf8('{"id":"abc","seq":7}'));
      const answer = await readLinked(adapter, 'lr/ptr.json', LINKS);
      equalJson(
        answer?.listed?.objects.map((o) => o.key),
        ['lr/parts/7/a', 'lr/parts/7/b'],
        'keys listed under lr/parts/7/',
      );
      equal(answer?.got?.object && new TextDecoder().decode(answer.got.object.bytes), 'document abc', 'the linked document');
      const none = await readLinked(adapter, 'lr/ptr.json', { get: { member: 'seq', before: 'lr/doc/', after: '.json' } });
      equal(none?.got?.key, 'lr/doc/7.json', 'a number member');
      equal(none?.listed, undefined, 'no list link asked: none listed');
    });

    ctx.test(
      "getLinked, when declared: follows a plain pointer's links itself, never to another key than the contract's",
      async (adapter) => {
        const getLinked = linkedReadOf(adapter);
        if (!getLinked) return;
        await storeAround(adapter);
        for (const [i, pointer] of POINTERS.entries()) {
          const bytes = typeof pointer.text === 'string' ? utf8(pointer.text) : pointer.text;
          const what = `getLinked, pointer ${i}`;
          await adapter.put('lr/ptr.json', bytes);
          const answer = notAbsent(await getLinked('lr/ptr.json', LINKS), what);
          ok(answer, `${what}: no value`);
          sameBytes(answer.value.bytes, bytes, `${what}: value`);
          equal((await adapter.get('lr/ptr.json'))?.version, answer.value.version, `${what}: value's version`);
          if (pointer.plain) ok(answer.got && answer.listed, `${what}: a plain ASCII pointer's links are followed`);
          if (answer.got) equal(answer.got.key, pointer.get, `${what}: linked key`);
          if (answer.listed) equal(answer.listed.prefix, pointer.list, `${what}: listed prefix`);
          await checkLinks(adapter, answer, what);
        }
        equal(await getLinked('lr/absent.json', LINKS), undefined, 'getLinked of an absent key');
      },
    );

    ctx.test(
      'readLinked with keysIfAbsent: the keys under the prefix when the value is absent, the value as before when not',
      async (adapter) => {
        await storeAround(adapter);
        const asked = { ...LINKS, keysIfAbsent: 'lr/parts/7/' };
        const absent = await readLinked(adapter, 'lr/absent.json', asked);
        ok(isAbsentLinked(absent), 'an absent value with keysIfAbsent: answered as absent');
        equal(absent.absent.prefix, 'lr/parts/7/', 'the prefix listed');
        equalJson(absent.absent.keys, await listedKeys(adapter, 'lr/parts/7/'), 'the keys listed under lr/parts/7/');
        const empty = await readLinked(adapter, 'lr/absent.json', { ...LINKS, keysIfAbsent: 'lr/none/' });
        equalJson(isAbsentLinked(empty) && empty.absent.keys, [], 'nothing under the prefix: no keys');
        await adapter.put('lr/ptr.json', utf8('{"id":"abc","seq":7}'));
        const present = await readLinked(adapter, 'lr/ptr.json', asked);
        ok(present && !isAbsentLinked(present), 'a present value: answered with it');
        equal(present.got?.key, 'lr/doc/abc.json', 'its linked key');
        const getLinked = linkedReadOf(adapter);
        if (!getLinked) return;
        // A store may leave the part unread (undefined); what it reads is the listing's.
        const own = await getLinked('lr/absent.json', asked);
        if (own !== undefined) {
          ok(isAbsentLinked(own), 'getLinked of an absent value with keysIfAbsent: undefined or absent');
          equalJson(own.absent.keys, await listedKeys(adapter, 'lr/parts/7/'), 'getLinked: the keys listed under lr/parts/7/');
        }
        ok(!isAbsentLinked(await getLinked('lr/ptr.json', asked)), 'getLinked of a present value: never absent');
      },
    );

    ctx.test('readLinked under given prefixes: keys, entries and first are what list and get answer', async (adapter) => {
      await storeAround(adapter);
      await adapter.put('lr/ptr.json', utf8('{"id":"abc","seq":7}'));
      await adapter.put('lr/parts/7/b', utf8('part b, written again: a new version and size'));
      const links = { keys: 'lr/parts/', entries: 'lr/parts/7', first: { prefix: 'lr/parts/', count: 3 } } satisfies ReadLinks;
      const answer = notAbsent(await readLinked(adapter, 'lr/ptr.json', links), 'readLinked');
      ok(answer?.keys && answer.entries && answer.first, 'readLinked: every part under a given prefix answered');
      equal(answer.entries.prefix, 'lr/parts/7', 'the entries prefix');
      equal(answer.entries.entries.length, 4, 'the entries under lr/parts/7 (parts/7/, parts/70/, parts/7-/)');
      equal(answer.first.objects.length, 3, 'three first objects');
      await checkUnderParts(adapter, answer, links, 'readLinked');
      equal(await readLinked(adapter, 'lr/absent.json', links), undefined, 'an absent value: none of its parts');
      const getLinked = linkedReadOf(adapter);
      if (!getLinked) return;
      // A store may leave any of them unread; what it reads is the listing's.
      const own = notAbsent(await getLinked('lr/ptr.json', links), 'getLinked');
      ok(own, 'getLinked: the value');
      await checkUnderParts(adapter, own, links, 'getLinked');
      equal(await getLinked('lr/absent.json', links), undefined, 'getLinked of an absent value: none of its parts');
    });
  });
}
