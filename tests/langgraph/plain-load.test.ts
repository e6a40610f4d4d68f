import { JsonPlusSerializer, emptyCheckpoint, uuid6, type Checkpoint, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryStorage } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { loadPlain, USE_SERDE } from '../../src/langgraph/plain-load.js';
import type { SaverState } from '../../src/langgraph/saver-state.js';

const serde = new JsonPlusSerializer();
const decided = { plainAsJson: true } as SaverState;

/** Values the serializer writes as records its reviver turns back into something else, beside plain data. */
const special = fc.constantFrom<unknown>(
  undefined,
  new Map([[1, 'a']]),
  new Set(['x']),
  /re/g,
  new Error('boom'),
  new Uint8Array([1, 2]),
  JSON.parse('{"__proto__":{"polluted":1}}'),
  JSON.parse('{"a":{"__proto__":[1]}}'),
  { lc: 2, type: 'undefined' },
  { lc: 2, type: 'constructor', id: ['Set'], method: null, args: [[1]] },
  { lc: 3, note: 'an lc member the reviver keeps as it is' },
  { lc: 1, type: 'not-a-constructor' },
);
/** Nested values of every kind; `keys` are the member names drawn besides short strings. */
const valuesWith = (keys: readonly string[]): fc.Arbitrary<unknown> =>
  fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 3 }),
      special,
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom(...keys)), tie('value'), { maxKeys: 3 }),
    ),
  })).value;
const anyValue = valuesWith(['lc', '__proto__', '10', 'type']);
/** Without drawn "__proto__" members (a Set made a prototype cannot be compared); `special` still holds plain ones. */
const comparableValue = valuesWith(['lc', '10', 'type']);

/** A round trip through a saver: one checkpoint with `values` and one pending write of `write`. */
async function putAndRead(saverSerde: SerializerProtocol | undefined, values: Record<string, unknown>, write: unknown) {
  const saver = new SavepointSaver({ storage: memoryStorage(), ...(saverSerde ? { serde: saverSerde } : {}) });
  const config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
  const versions = Object.fromEntries(Object.keys(values).map((k) => [k, 1]));
  const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(0), channel_values: values, channel_versions: versions };
  const stored = await saver.put(config, checkpoint, { source: 'loop', step: 0, parents: {} }, versions);
  await saver.putWrites(stored, [['w', write]], 'task-1');
  return saver.getTuple(stored);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('values read back without the serializer where it would return them as parsed', () => {
  it('property: for any text LangGraph’s serializer writes, loadPlain answers what loadsTyped resolves to, or leaves it to the serializer', async () => {
    let shortcut = 0;
    await fc.assert(
      fc.asyncProperty(anyValue, async (value) => {
        const [type, bytes] = await serde.dumpsTyped(value);
        const text = new TextDecoder().decode(bytes);
        const plain = loadPlain(decided, type, text);
        const revived = await serde.loadsTyped(type, text);
        if (plain === USE_SERDE) {
          // Only bytes, or a text with a member the reviver changes, is left to it.
          if (type === 'json') expect(/"lc"|"__proto__"/.test(text)).toBe(true);
          return;
        }
        shortcut++;
        expect(plain).toStrictEqual(revived);
        if (plain !== null && typeof plain === 'object') expect(Object.getPrototypeOf(plain)).toBe(Object.getPrototypeOf(revived));
      }),
      { numRuns: 400 },
    );
    expect(shortcut).toBeGreaterThan(100);
  });

  it('leaves bytes, other types, unparsable text, deep nesting and an undecided serializer to the serializer', () => {
    expect(loadPlain(decided, 'json', new TextEncoder().encode('1'))).toBe(USE_SERDE);
    expect(loadPlain(decided, 'bytes', '1')).toBe(USE_SERDE);
    expect(loadPlain(decided, 'json', '{')).toBe(USE_SERDE);
    expect(loadPlain(decided, 'json', `${'['.repeat(100)}${']'.repeat(100)}`)).toBe(USE_SERDE);
    expect(loadPlain({ plainAsJson: false } as SaverState, 'json', '1')).toBe(USE_SERDE);
    expect(loadPlain({ plainAsJson: undefined } as SaverState, 'json', '1')).toBe(USE_SERDE);
    expect(loadPlain(decided, 'json', '{"a":[1,{"b":null}],"10":-0}')).toStrictEqual({ a: [1, { b: null }], '10': -0 });
  });

  it('property: a saver with LangGraph’s serializer reads back what one with a serializer of the caller’s reads (which is called for every value)', async () => {
    const wrapped: SerializerProtocol = { dumpsTyped: (v) => serde.dumpsTyped(v), loadsTyped: (t, d) => serde.loadsTyped(t, d) };
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('messages', 'turn', 'lc'), comparableValue, { maxKeys: 3 }),
        comparableValue,
        async (values, write) => {
          const ours = await putAndRead(undefined, values, write);
          const theirs = await putAndRead(wrapped, values, write);
          expect(ours?.checkpoint.channel_values).toStrictEqual(theirs?.checkpoint.channel_values);
          expect(ours?.pendingWrites).toStrictEqual(theirs?.pendingWrites);
          expect(ours?.metadata).toStrictEqual(theirs?.metadata);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('reads a plain checkpoint, its metadata and its writes without the serializer’s reviver; a Map still goes through it', async () => {
    const loads = vi.spyOn(JsonPlusSerializer.prototype, 'loadsTyped');
    const tuple = await putAndRead(undefined, { messages: ['hi', { role: 'ai' }], turn: 3 }, { text: 'w' });
    expect(tuple?.checkpoint.channel_values).toStrictEqual({ messages: ['hi', { role: 'ai' }], turn: 3 });
    expect(tuple?.pendingWrites).toStrictEqual([['task-1', 'w', { text: 'w' }]]);
    expect(loads).not.toHaveBeenCalled();
    const map = await putAndRead(undefined, { m: new Map([[1, 'a']]) }, undefined);
    expect(map?.checkpoint.channel_values.m).toStrictEqual(new Map([[1, 'a']]));
    expect(map?.pendingWrites).toStrictEqual([['task-1', 'w', undefined]]);
    expect(loads).toHaveBeenCalledTimes(2);
  });
});
