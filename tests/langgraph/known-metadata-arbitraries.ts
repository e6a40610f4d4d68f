/** Checkpoint documents' members for the tests of the metadata the saver hands down (known-metadata.test.ts, the PostgreSQL store's tests). */
import fc from 'fast-check';
import type { LangGraphPayload } from 'savepoint/langgraph';
import type { JsonObject } from '../../src/contract/json.js';
import { storedValue } from '../../src/langgraph/serialized.js';
import type { StoredWrite, WritesDocument } from '../../src/langgraph/writes.js';

/** Strings as documents hold them: escapes, NUL, lone surrogates, `lc`, number-like text. */
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('lc', '\u0000', '\uD800', 'a"b', 'x\\u0041', '1e1234', ':1e1234', 'é'),
);
/** JSON values with numbers a double prints in every form (exponents, -0, large integers). */
const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(2 ** 64 + 2 ** 12, 1e21, 5e-324, -0, 1e300),
  text,
);
/** Whether `v` holds a `__proto__` key at any depth: savepoint refuses to store one (canonical-json.ts). */
export function holdsProtoKey(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(holdsProtoKey);
  if (typeof v !== 'object' || v === null) return false;
  return Object.hasOwn(v, '__proto__') || Object.values(v).some(holdsProtoKey);
}

/**
 * Metadata as LangGraph hands it: its usual members, keys that sort otherwise than JSON.parse
 * orders them, `lc`. No `__proto__` key at any depth (`fc.jsonValue` draws one now and then).
 */
const metadata = fc
  .dictionary(fc.oneof(fc.constantFrom('source', 'step', 'parents', 'lc', '1', '10', 'user'), text), value, { maxKeys: 4 })
  .filter((m) => !holdsProtoKey(m)) as fc.Arbitrary<JsonObject>;

/** A channel's stored text: short or sealed as a piece of its own, with any text and numbers. */
const channel = fc
  .tuple(
    fc.oneof(
      value,
      text.map((t) => t.padEnd(5000, 'x')),
    ),
    fc.integer({ min: 1, max: 99 }),
  )
  .map(([v, version]) => ({ ...storedValue(['json', new TextEncoder().encode(JSON.stringify(v) ?? 'null')]), version }));

export const checkpointPayload: fc.Arbitrary<LangGraphPayload> = fc.record(
  {
    thread_id: text,
    checkpoint_ns: fc.constant(''),
    checkpoint: fc.constant(storedValue(['json', new TextEncoder().encode('{"v":4}')])),
    channel_values: fc.dictionary(fc.constantFrom('messages', 'a', 'b'), channel, { maxKeys: 3 }),
    metadata,
    metadata_blob: fc.constant(storedValue(['bytes', Uint8Array.of(1, 2)])),
  },
  { requiredKeys: ['thread_id', 'checkpoint_ns', 'checkpoint', 'channel_values', 'metadata'] },
);

/** A task's writes document's members and writes: any text, values with any numbers. */
export const writesDocument: fc.Arbitrary<[Omit<WritesDocument, 'integrity' | 'writes'>, StoredWrite[]]> = fc.tuple(
  fc.record({ thread_id: text, checkpoint_ns: fc.constant(''), checkpoint_id: fc.uuid(), task_id: text, task_path: text }),
  fc.array(
    fc
      .tuple(fc.integer({ min: -4, max: 1000 }), text, channel)
      .map(([idx, ch, { version: _, ...v }]) => ({ idx, channel: ch, ...v }) as StoredWrite),
    { maxLength: 3 },
  ),
);
