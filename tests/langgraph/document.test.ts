import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonPlusSerializer, MemorySaver, emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listAll, memoryStorage } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { langGraphProfile, SavepointSaver, type LangGraphPayload, type SerializedValue } from 'savepoint/langgraph';
import { sealDocumentBytes } from '../../src/codec/json-document.js';
import type { JsonObject } from '../../src/contract/json.js';
import { encodeCheckpointDocument, sealCheckpointDocument, snapshotOf } from '../../src/langgraph/document.js';
import { storedValue, valueBytes } from '../../src/langgraph/serialized.js';
import { encodeWrites, decodeWrites, type StoredWrite } from '../../src/langgraph/writes.js';

const FIXTURE = join(import.meta.dirname, '../fixtures/langgraph/base64-store');

/** Any string, lone surrogates and a byte order mark included. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom('\uFEFFbom', '\uD800', 'a\uDC00b', '"\\\n\u0000'),
);
const anyBytes = fc.oneof(
  fc.uint8Array({ maxLength: 40 }),
  anyText.map((t) => new TextEncoder().encode(t)),
  fc.constant(new Uint8Array([0xef, 0xbb, 0xbf, 0x31])),
  fc.constant(new Uint8Array([0xed, 0xa0, 0x80])),
);
const serialized = fc.tuple(fc.constantFrom('json', 'bytes', 'x-custom'), anyBytes).map(([type, bytes]) => storedValue([type, bytes]));
/** A channel's value longer than 4 KiB as stored text (sealed as a piece of its own), escapes and non-ASCII included. */
const longSerialized = fc
  .tuple(anyText, fc.integer({ min: 4000, max: 9000 }))
  .map(([text, length]) => storedValue(['json', new TextEncoder().encode(JSON.stringify(text.padEnd(length, 'é"\\n x')))]));
const jsonValue = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<unknown>;
const checkpointId = fc.uuid();
/** Sealing buffers reused across runs, as a saver reuses its own: left dirty by the run before, some too small for the document. */
const scratches = [0, 300, 700, 32 * 1024].map((size) => new Uint8Array(size).fill(0x7b));
let scratchRun = 0;
const nextScratch = (): Uint8Array => scratches[scratchRun++ % scratches.length]!;

const payload: fc.Arbitrary<LangGraphPayload> = fc.record(
  {
    thread_id: anyText,
    checkpoint_ns: fc.oneof(fc.constant(''), anyText),
    parent_checkpoint_id: checkpointId,
    checkpoint: serialized,
    channel_values: fc.dictionary(
      fc.oneof(anyText, fc.constantFrom('0', '10', '2', '__start__', 'branch:to:step')).filter((k) => k !== '__proto__'),
      fc
        .tuple(
          fc.oneof({ weight: 3, arbitrary: serialized }, { weight: 1, arbitrary: longSerialized }),
          fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), anyText),
        )
        .map(([v, version]) => ({ ...v, version })),
      { maxKeys: 5 },
    ),
    // (A "__proto__" key anywhere is refused by both encoders alike.)
    metadata: fc
      .dictionary(anyText, jsonValue, { maxKeys: 4 })
      .filter((m) => !JSON.stringify(m).includes('"__proto__"')) as fc.Arbitrary<JsonObject>,
    metadata_blob: serialized,
  },
  { requiredKeys: ['thread_id', 'checkpoint_ns', 'checkpoint', 'channel_values', 'metadata'] },
);

describe('SavepointSaver documents: assembled as text, the same bytes as the generic encoder', () => {
  it('property: a checkpoint document is byte for byte what langGraphProfile.document.encode makes, and decodes to the same payload', async () => {
    await fc.assert(
      fc.asyncProperty(
        payload,
        checkpointId,
        fc.integer({ min: 1, max: 1e9 }),
        fc.constantFrom('input', 'loop', 'update', 'fork'),
        fc.date({ min: new Date(0), max: new Date('9999-12-31'), noInvalidDate: true }),
        async (p, id, sequence, source, at) => {
          const scratch = nextScratch();
          const draft = {
            id,
            runId: 'run-1',
            sequence,
            createdAt: at.toISOString(),
            source,
            sourceDetails: [],
            status: 'in_progress',
            payload: p,
          };
          const generic = await langGraphProfile.document.encode(draft);
          const fast = await encodeCheckpointDocument({ id, runId: 'run-1', sequence, createdAt: at.toISOString(), source }, p);
          expect(new TextDecoder().decode(fast)).toBe(new TextDecoder().decode(generic.bytes));
          // Sealed into a reused buffer (left dirty by the run before; some too small): the same bytes.
          const inScratch = await encodeCheckpointDocument({ id, runId: 'run-1', sequence, createdAt: at.toISOString(), source }, p, {
            scratch,
          });
          expect(inScratch).toEqual(generic.bytes);
          const decoded = await langGraphProfile.document.decode(fast, 'x');
          expect(decoded.payload).toEqual(JSON.parse(JSON.stringify(p)));
          // The snapshot the saver keeps for its next read of the document: what that read would decode.
          const sealed = await sealCheckpointDocument({ id, runId: 'run-1', sequence, createdAt: at.toISOString(), source }, p, {
            scratch: nextScratch(),
          });
          expect(sealed.bytes).toEqual(generic.bytes);
          const kept = snapshotOf(sealed.members);
          expect(kept).toStrictEqual(decoded);
          expect(Object.keys(kept.payload.channel_values)).toEqual(Object.keys(decoded.payload.channel_values));
        },
      ),
      { numRuns: 80 },
    );
  });

  it('property: a writes document is byte for byte what sealDocumentBytes makes, and decodes to the same writes', async () => {
    const write: fc.Arbitrary<StoredWrite> = fc
      .tuple(fc.integer({ min: -4, max: 1000 }), anyText, serialized)
      .map(([idx, channel, v]) => ({ idx, channel, ...v }));
    await fc.assert(
      fc.asyncProperty(
        anyText,
        anyText,
        checkpointId,
        anyText,
        anyText,
        fc.array(write, { maxLength: 4 }),
        async (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes) => {
          const scratch = nextScratch();
          const document = { thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes };
          const bytes = await encodeWrites(document, writes);
          expect(new TextDecoder().decode(bytes)).toBe(
            new TextDecoder().decode((await sealDocumentBytes(document as unknown as JsonObject)).bytes),
          );
          expect(await encodeWrites(document, writes, scratch)).toEqual(bytes);
          expect((await decodeWrites(bytes, 'w')).writes).toEqual(writes);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('property: serializer output is stored losslessly, as text exactly when it is JSON in exact UTF-8 (a BOM kept, surrogate bytes and malformed UTF-8 as base64)', () => {
    fc.assert(
      fc.property(fc.constantFrom('json', 'bytes'), anyBytes, (type, bytes) => {
        const stored: SerializedValue = storedValue([type, bytes]);
        expect(valueBytes(stored, 'x')).toEqual(bytes);
        let exact = true;
        try {
          new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
        } catch {
          exact = false;
        }
        expect('text' in stored).toBe(type === 'json' && exact);
      }),
      { numRuns: 200 },
    );
  });

  it('property: any JSON-serializable state (lone surrogates, BOMs, quotes, bytes) reads back from SavepointSaver exactly as from MemorySaver', async () => {
    // The first value is also metadata, and metadata holding a "__proto__" key is refused (checkpoint_schema_invalid) by design.
    const state = fc
      .dictionary(fc.constantFrom('a', 'b', 'c'), fc.oneof(jsonValue, anyText, anyBytes), { minKeys: 1 })
      .filter((values) => !(JSON.stringify(Object.values(values)[0]) ?? '').includes('"__proto__":'));
    await fc.assert(
      // (MemorySaver cannot read back a Uint8Array write at all, so writes are JSON values here.)
      fc.asyncProperty(state, fc.oneof(jsonValue, anyText), async (values, written) => {
        const versions = Object.fromEntries(Object.keys(values).map((k) => [k, 1]));
        const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(1), channel_values: values, channel_versions: versions };
        const config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
        const meta = { source: 'input' as const, step: -1, parents: {}, note: Object.values(values)[0] };
        const ours = new SavepointSaver({ storage: memoryStorage() });
        const peer = new MemorySaver();
        const saved = await ours.put(config, checkpoint, meta, versions);
        await ours.putWrites(saved, [['a', written]], 'task');
        const peerSaved = await peer.put(config, checkpoint, meta);
        await peer.putWrites(peerSaved, [['a', written]], 'task');
        const [a, b] = [await ours.getTuple(saved), await peer.getTuple(peerSaved)];
        expect(a?.checkpoint.channel_values).toEqual(b?.checkpoint.channel_values);
        expect(a?.metadata).toEqual(b?.metadata);
        expect(a?.pendingWrites).toEqual(b?.pendingWrites);
      }),
      { numRuns: 60 },
    );
  });

  it('a store written before the text form (every value base64) reads the same: checkpoints, channels, metadata, pending writes, and a new put on top of it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-lg-base64-'));
    try {
      cpSync(FIXTURE, dir, { recursive: true });
      const storage = fsStorage({ dir });
      const saver = new SavepointSaver({ storage });
      const head = await saver.getTuple({ configurable: { thread_id: 'order-42' } });
      expect(head?.checkpoint.channel_values).toEqual({ note: 'next', items: ['a', 'b', 'c'], blob: new Uint8Array([0, 255, 1]) });
      expect(head?.metadata).toEqual({ source: 'loop', step: 0, parents: {} });
      expect(head?.pendingWrites).toEqual([['task-2', '__error__', { message: 'boom' }]]);
      const all = [];
      for await (const t of saver.list({ configurable: { thread_id: 'order-42' } }, { filter: { user: 'ana' } })) all.push(t);
      expect(all.map((t) => t.checkpoint.channel_values)).toEqual([
        { note: 'café \u{1F600} "quoted"', items: ['a', 'b'], blob: new Uint8Array([0, 255, 1]) },
      ]);
      expect(all[0]?.pendingWrites).toEqual([
        ['task-1', 'items', ['c']],
        ['task-1', 'note', 'next'],
      ]);
      // A put on top carries the base64 `blob` channel over from the old parent unchanged.
      const next: Checkpoint = {
        ...emptyCheckpoint(),
        id: '1f0cb3a0-0000-6000-8000-000000000003',
        channel_values: { note: 'third', items: ['a'], blob: new Uint8Array([0, 255, 1]) },
        channel_versions: { note: 3, items: 3, blob: 1 },
      };
      const saved = await saver.put(head!.config, next, { source: 'loop', step: 1, parents: {} }, { note: 3, items: 3 });
      expect((await saver.getTuple(saved))?.checkpoint.channel_values).toEqual(next.channel_values);
      const text = new TextDecoder().decode(
        (await storage.get('langgraph/order-42/history/1f0cb3a0-0000-6000-8000-000000000003.json'))!.bytes,
      );
      expect(text).toContain('"note":{"text":"\\"third\\"","type":"json","version":3}');
      expect(text).toContain('"blob":{"data":"AP8B","type":"bytes","version":1}');
      expect((await listAll(storage, 'langgraph/')).length).toBe(6); // the fixture's files, the new checkpoint, and the head its put created
      await storage.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('without the per-put JSON Schema check, a put still refuses what the schema would: a "__proto__" channel, a NaN version, an empty type tag — and stores nothing', async () => {
    const storage = memoryStorage();
    const code = async (p: Promise<unknown>): Promise<string | undefined> =>
      (
        (await p.then(
          () => undefined,
          (e: unknown) => e,
        )) as { reasonCode?: string } | undefined
      )?.reasonCode;
    const config = { configurable: { thread_id: 't' } };
    const meta = { source: 'loop' as const, step: 0, parents: {} };
    const proto: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(1),
      channel_values: JSON.parse('{"__proto__": 1}') as Record<string, unknown>,
      channel_versions: JSON.parse('{"__proto__": 1}') as Record<string, number>,
    };
    expect(
      await code(new SavepointSaver({ storage }).put(config, proto, meta, JSON.parse('{"__proto__": 1}') as Record<string, number>)),
    ).toBe('checkpoint_schema_invalid');
    const nan: Checkpoint = { ...emptyCheckpoint(), id: uuid6(2), channel_values: { a: 1 }, channel_versions: { a: Number.NaN } };
    expect(await code(new SavepointSaver({ storage }).put(config, nan, meta, { a: Number.NaN }))).toBe('checkpoint_schema_invalid');
    const serde = new JsonPlusSerializer();
    const untagged = Object.assign(Object.create(serde) as JsonPlusSerializer, {
      dumpsTyped: async (value: unknown) => ['', (await serde.dumpsTyped(value))[1]],
    });
    const ok: Checkpoint = { ...emptyCheckpoint(), id: uuid6(3), channel_values: { a: 1 }, channel_versions: { a: 1 } };
    expect(await code(new SavepointSaver({ storage, serde: untagged }).put(config, ok, meta, { a: 1 }))).toBe('checkpoint_schema_invalid');
    expect(await listAll(storage, '')).toEqual([]);
  });

  it('JsonPlusSerializer output is stored as readable text, not base64', async () => {
    const serde = new JsonPlusSerializer();
    const [type, bytes] = await serde.dumpsTyped({ city: 'Zürich', n: 1 });
    expect(storedValue([type, bytes])).toEqual({ type: 'json', text: '{"city":"Zürich","n":1}' });
  });
});
