import { JsonPlusSerializer, emptyCheckpoint, uuid6, type Checkpoint, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';

/** What one `loadsTyped` call was given. */
interface Load {
  readonly type: string;
  readonly data: Uint8Array | string;
}

/** LangGraph's serializer behind a plain object (so the saver calls it for every value), recording what each load is given. */
function recording(inner: SerializerProtocol = new JsonPlusSerializer()): { serde: SerializerProtocol; loads: Load[] } {
  const loads: Load[] = [];
  return {
    loads,
    serde: {
      dumpsTyped: (value: unknown) => inner.dumpsTyped(value),
      loadsTyped: (type: string, data: Uint8Array | string) => {
        loads.push({ type, data });
        return inner.loadsTyped(type, data);
      },
    },
  };
}

const config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
const plain = new JsonPlusSerializer();

async function putAndRead(serde: SerializerProtocol, values: Record<string, unknown>, write: unknown) {
  const saver = new SavepointSaver({ storage: memoryStorage(), serde });
  const versions = Object.fromEntries(Object.keys(values).map((k) => [k, 1]));
  const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(0), channel_values: values, channel_versions: versions };
  const stored = await saver.put(config, checkpoint, { source: 'loop', step: 0, parents: {} }, versions);
  await saver.putWrites(stored, [['w', write]], 'task-1');
  return saver.getTuple(stored);
}

describe('values read back are handed to the serializer as the text stored for them', () => {
  it('a json value is given as its stored text (no UTF-8 round trip); a bytes value as bytes', async () => {
    const { serde, loads } = recording();
    const blob = new Uint8Array([0, 255, 7]);
    const tuple = await putAndRead(serde, { messages: ['é', 'a'.repeat(3000)], blob }, { x: 1 });
    expect(tuple?.checkpoint.channel_values).toEqual({ messages: ['é', 'a'.repeat(3000)], blob });
    expect(tuple?.pendingWrites).toEqual([['task-1', 'w', { x: 1 }]]);
    const json = loads.filter((l) => l.type === 'json');
    expect(json.length).toBeGreaterThanOrEqual(3); // the checkpoint, its channel, the write (and the metadata)
    for (const l of json) expect(typeof l.data).toBe('string');
    const bytes = loads.filter((l) => l.type === 'bytes');
    expect(bytes).toHaveLength(1);
    expect(bytes[0]!.data).toBeInstanceOf(Uint8Array);
    expect([...(bytes[0]!.data as Uint8Array)]).toEqual([...blob]);
  });

  it('json bytes with a leading byte order mark go back as the same bytes (a decoder drops the mark, JSON.parse would not)', async () => {
    const bom = new Uint8Array([0xef, 0xbb, 0xbf]);
    const withMark: SerializerProtocol = {
      dumpsTyped: async (value: unknown) => ['json', new Uint8Array([...bom, ...new TextEncoder().encode(JSON.stringify(value))])],
      loadsTyped: async (_type: string, data: Uint8Array | string) =>
        JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data)),
    };
    const { serde, loads } = recording(withMark);
    const tuple = await putAndRead(serde, { a: { b: [1, 'two'] } }, 'w');
    expect(tuple?.checkpoint.channel_values).toEqual({ a: { b: [1, 'two'] } });
    expect(tuple?.pendingWrites).toEqual([['task-1', 'w', 'w']]);
    const channelLoad = loads.find((l) => l.data instanceof Uint8Array && new TextDecoder().decode(l.data).includes('two'));
    expect(channelLoad && [...(channelLoad.data as Uint8Array).slice(0, 3)]).toEqual([...bom]);
  });

  it('property: what is read back equals what was put, for any JSON channel values and writes', async () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom('a', 'b', 'c'), json, { minKeys: 1 }), json, async (values, write) => {
        const { serde } = recording();
        const tuple = await putAndRead(serde, values, write);
        // What LangGraph's serializer alone gives back: JSON turns -0 into 0, and its reviver drops an own `__proto__` key.
        const alone = async (value: unknown): Promise<unknown> => plain.loadsTyped(...(await plain.dumpsTyped(value)));
        expect(tuple?.checkpoint.channel_values).toEqual(await alone(values));
        expect(tuple?.pendingWrites).toEqual([['task-1', 'w', await alone(write)]]);
      }),
      { numRuns: 60 },
    );
  });
});
