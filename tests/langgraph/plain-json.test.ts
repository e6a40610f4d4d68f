import type { RunnableConfig } from '@langchain/core/runnables';
import {
  JsonPlusSerializer,
  emptyCheckpoint,
  uuid6,
  type Checkpoint,
  type CheckpointMetadata,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, listAll, memoryStorage } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { manualClock } from 'savepoint/testing';
import { dumpAll, plainCanonicalJson, plainJson, plainObjectCanonicalJson, writesPlainAsJson } from '../../src/langgraph/plain-json.js';
import { canonicalJson } from '../../src/codec/canonical-json.js';
import { quotedAgain, quoteRecent, rememberingRecent } from '../../src/langgraph/recent-texts.js';

/** Strings of every kind (lone surrogates, controls, line separators), every kind of number, booleans, null. */
const primitive = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('\uD800', 'a\uDC00', '\u2028\u2029', '\u0000\u001f\u007f', '"\\/'),
  fc.double(),
  fc.integer(),
  fc.constantFrom(-0, Number.MAX_VALUE, Number.MIN_VALUE, 1e21, 1e-7),
  fc.boolean(),
  fc.constant(null),
);
/** What the serializer changes (undefined, Send, class instances, toJSON) and cannot write as JSON (cycles), inside plain data or not. */
const special = fc.constantFrom<unknown>(
  undefined,
  new Map([[1, 'a']]),
  new Set(['x']),
  new Date(0),
  /re/g,
  new Error('boom'),
  new Uint8Array([1, 2]),
  { lg_name: 'Send', node: 'n', args: { a: 1 } },
  { toJSON: () => 'x' },
  Object.assign(Object.create({ inherited: 1 }) as object, { own: 2 }),
  (() => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    return cycle;
  })(),
);
const anyValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    primitive,
    special,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 4 }), tie('value'), { maxKeys: 3 }),
    fc.jsonValue({ maxDepth: 3 }),
  ),
})).value;

class SubclassedSerializer extends JsonPlusSerializer {}

/** Extra metadata members: plain data of every kind (NaN, -0, integer-like keys, nesting) and what the serializer changes. */
const metadataExtra = fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('10', '9', 'user', 'é')), anyValue, {
  maxKeys: 3,
});

/** canonicalJson's text, or undefined where it refuses the value (a "__proto__" key: checkpoint_schema_invalid). */
function canonicalOrRefused(value: unknown): string | undefined {
  try {
    return canonicalJson(value);
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_schema_invalid')) return undefined;
    throw err;
  }
}

describe('SavepointSaver: plain JSON data written as its JSON text without a serializer call', () => {
  it('property: for any value, the text written without the serializer is exactly what JsonPlusSerializer writes, as type json — or the serializer is called', async () => {
    const serde = new JsonPlusSerializer();
    let plain = 0;
    await fc.assert(
      fc.asyncProperty(anyValue, async (value) => {
        const text = plainJson(value);
        if (text === undefined) return;
        plain++;
        const [type, bytes] = await serde.dumpsTyped(value);
        expect(type).toBe('json');
        expect(text).toBe(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes));
      }),
      { numRuns: 400 },
    );
    expect(plain).toBeGreaterThan(100);
    for (const other of [
      undefined,
      new Uint8Array(1),
      1n,
      Symbol('s'),
      () => 1,
      [1, undefined],
      { a: undefined },
      [new Date(0)],
      { n: { lg_name: 'Send' } },
    ])
      expect(plainJson(other)).toBeUndefined();
    const deep: unknown[] = [];
    let at = deep;
    for (let i = 0; i < 100; i++) at.push((at = []));
    expect(plainJson(deep)).toBeUndefined();
    expect(plainJson({ b: [1, 'x', null], a: { c: true } })).toBe('{"b":[1,"x",null],"a":{"c":true}}');
  });

  it('property: the canonical text of plain data is what parsing its JSON text back and making it canonical gives; a "__proto__" key is left to that path', () => {
    fc.assert(
      fc.property(anyValue, (value) => {
        const text = plainJson(value);
        if (text === undefined) return;
        expect(plainCanonicalJson(value)).toBe(canonicalOrRefused(JSON.parse(text)));
      }),
      {
        numRuns: 300,
        // Regression (a flake of the test): fc.jsonValue makes "__proto__" keys, which canonicalJson refuses.
        examples: [[JSON.parse('{"a":1,"__proto__":"x"}')], [JSON.parse('[{"b":{"__proto__":null}}]')]],
      },
    );
    expect(plainCanonicalJson({ b: [Number.NaN, -0, 1e21], '10': 'x', '9': { z: null, a: '\uD800' } })).toBe(
      '{"10":"x","9":{"a":"\\ud800","z":null},"b":[null,0,1e+21]}',
    );
    expect(plainCanonicalJson(JSON.parse('{"a":{"__proto__":1}}'))).toBeUndefined();
  });

  it('property: the canonical text of plain metadata, made without its JSON text, is that of any plain object and undefined for anything else', () => {
    fc.assert(
      fc.property(fc.oneof(anyValue, metadataExtra), (value) => {
        const object = value !== null && typeof value === 'object' && !Array.isArray(value);
        expect(plainObjectCanonicalJson(value)).toBe(object && plainJson(value) !== undefined ? plainCanonicalJson(value) : undefined);
      }),
      { numRuns: 300 },
    );
    expect(plainObjectCanonicalJson({ step: 1, source: 'loop', parents: {} })).toBe('{"parents":{},"source":"loop","step":1}');
  });

  it('property: a string encoder that remembers recent long strings gives what encoding each string anew gives, whatever came before', () => {
    let calls = 0;
    const encode = (text: string): string => {
      calls++;
      return JSON.stringify(text);
    };
    // Few, long, alike strings (equal content as other instances, one character apart, short ones): slots hit, miss and get overwritten.
    const text = fc
      .tuple(fc.constantFrom('a', 'b', '"', '\uD800'), fc.integer({ min: 0, max: 3 }), fc.nat(12))
      .map(([c, n, k]) => `${'x'.repeat(60 + k)}${c}`.repeat(n) + String(k));
    fc.assert(
      fc.property(fc.array(text, { maxLength: 40 }), (texts) => {
        const recent = rememberingRecent(encode);
        for (const t of texts) expect(recent(t)).toBe(JSON.stringify(t));
      }),
      { numRuns: 200 },
    );
    const recent = rememberingRecent(encode);
    const long = 'step 1 '.repeat(60);
    calls = 0;
    recent(long);
    recent(long);
    recent(`${long}`.slice(0));
    expect(calls).toBe(1);
    expect(quoteRecent(long)).toBe(JSON.stringify(long));
  });

  it('property: a quoted string quoted again is found, not quoted again, when its first quoting escaped nothing; the same text either way', () => {
    let calls = 0;
    const encode = (text: string): string => {
      calls++;
      return JSON.stringify(text);
    };
    // Strings with and without characters JSON escapes, each quoted and then its quoting quoted (a write's value stored as text).
    const text = fc
      .tuple(fc.constantFrom('', '"', '\\', '\n', '\u0001', '\uD800', '\u2028', 'é', '\u{1F600}'), fc.nat(80))
      .map(([c, k]) => `${k} ${'x'.repeat(60 + k)}${c}`);
    fc.assert(
      fc.property(fc.array(text, { maxLength: 20 }), (texts) => {
        const recent = rememberingRecent(encode, quotedAgain);
        for (const t of texts) {
          const quoted = recent(t);
          expect(quoted).toBe(JSON.stringify(t));
          expect(recent(quoted)).toBe(JSON.stringify(quoted));
        }
      }),
      { numRuns: 300 },
    );
    const recent = rememberingRecent(encode, quotedAgain);
    const note = `7 ${'x'.repeat(1000)}`;
    calls = 0;
    expect(recent(recent(note))).toBe(JSON.stringify(JSON.stringify(note)));
    expect(calls).toBe(1);
    const escaped = `7 "${'x'.repeat(1000)}"`;
    calls = 0;
    expect(recent(recent(escaped))).toBe(JSON.stringify(JSON.stringify(escaped)));
    expect(calls).toBe(2);
    expect(quoteRecent(quoteRecent(note))).toBe(JSON.stringify(JSON.stringify(note)));
  });

  it('metadata with a "__proto__" key is refused as before, written without the serializer or not', async () => {
    const metadata = JSON.parse('{"source":"loop","step":0,"parents":{},"x":{"__proto__":1}}') as CheckpointMetadata;
    for (const serde of [undefined, new SubclassedSerializer()]) {
      const storage = memoryStorage();
      const saver = new SavepointSaver({ storage, ...(serde ? { serde } : {}) });
      const failed = await saver.put({ configurable: { thread_id: 't' } }, { ...emptyCheckpoint(), id: uuid6(0) }, metadata, {}).then(
        () => undefined,
        (err: unknown) => (err as { reasonCode?: string }).reasonCode,
      );
      expect(failed).toBe('checkpoint_schema_invalid');
      expect(await listAll(storage, '')).toEqual([]);
    }
  });

  it("only LangGraph's own JsonPlusSerializer, unchanged, is skipped: a subclass, a replaced method or another serializer is always called", async () => {
    expect(await writesPlainAsJson(new JsonPlusSerializer())).toBe(true);
    expect(await writesPlainAsJson(new SubclassedSerializer())).toBe(false);
    const replaced = new JsonPlusSerializer();
    replaced.dumpsTyped = async (value: unknown) => ['json', new TextEncoder().encode(JSON.stringify(value))];
    expect(await writesPlainAsJson(replaced)).toBe(false);
    const other: SerializerProtocol = {
      dumpsTyped: async (value: unknown) => ['json', new TextEncoder().encode(JSON.stringify(value))],
      loadsTyped: async (_t: string, d: Uint8Array | string) => JSON.parse(String(d)) as unknown,
    };
    expect(await writesPlainAsJson(other)).toBe(false);
    // Without `primitives`, every value goes to the serializer.
    const calls: unknown[] = [];
    const counting: SerializerProtocol = {
      dumpsTyped: async (value: unknown) => (calls.push(value), ['json', new Uint8Array(0)]),
      loadsTyped: async () => undefined,
    };
    await dumpAll(counting, [1, 'a', null], false);
    expect(calls).toEqual([1, 'a', null]);
    expect(dumpAll(counting, [1, 'a', null, { b: [2] }], true)).toEqual(['1', '"a"', 'null', '{"b":[2]}']);
    expect(calls.length).toBe(3);
  });

  it('property: the store holds byte for byte what a saver calling the serializer for every value holds (checkpoints, channels, pending writes), and reads back the same', async () => {
    const state = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'branch:to:x'), anyValue, { minKeys: 1 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(state, { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', '__error__'), anyValue), { maxLength: 3 }),
        metadataExtra,
        async (steps, writes, metadata) => {
          const checkpoints = steps.map((values, i): Checkpoint => ({
            ...emptyCheckpoint(),
            id: uuid6(i),
            channel_values: values,
            channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, i + 1])),
          }));
          const stores = [memoryStorage(), memoryStorage()];
          const savers = [
            new SavepointSaver({ storage: stores[0]!, clock: manualClock() }),
            new SavepointSaver({ storage: stores[1]!, clock: manualClock(), serde: new SubclassedSerializer() }),
          ];
          // Metadata holding a "__proto__" key (fc.jsonValue makes some) is refused by both, alike.
          const refused: (string | undefined)[] = [];
          for (const saver of savers) {
            let config: RunnableConfig = { configurable: { thread_id: 't', checkpoint_ns: '' } };
            try {
              for (const [i, checkpoint] of checkpoints.entries()) {
                config = await saver.put(
                  config,
                  checkpoint,
                  { source: 'loop', step: i, parents: {}, ...metadata } as CheckpointMetadata,
                  checkpoint.channel_versions,
                );
                await saver.putWrites(config, writes, `task-${i}`);
              }
              refused.push(undefined);
            } catch (err) {
              refused.push((err as { reasonCode?: string }).reasonCode ?? String(err));
            }
          }
          expect(refused[1]).toBe(refused[0]);
          expect([undefined, 'checkpoint_schema_invalid']).toContain(refused[0]);
          const keys = await listAll(stores[0]!, '');
          expect(await listAll(stores[1]!, '')).toEqual(keys);
          for (const { key } of keys) expect((await stores[0]!.get(key))!.bytes).toEqual((await stores[1]!.get(key))!.bytes);
          const [a, b] = await Promise.all(savers.map((s) => s.getTuple({ configurable: { thread_id: 't' } })));
          expect(a?.checkpoint.channel_values).toEqual(b?.checkpoint.channel_values);
          expect(a?.pendingWrites).toEqual(b?.pendingWrites);
        },
      ),
      { numRuns: 40 },
    );
  });
});
