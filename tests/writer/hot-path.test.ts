/**
 * A lean hot path (memory 1 KB row): the writer seals the usual checkpoint without a
 * promise (`encodeForStorageSync`, `encodePayloadTextSync`). These tests hold it to the
 * general path: the same bytes as the profile's `encode` of the whole snapshot, the same
 * checksum, the same refusals — over random headers and payloads.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, defaultProfile, isCheckpointError, type JsonValue, type Profile } from 'savepoint';
import { newSnapshotId } from '../../src/contract/ids.js';
import { assertKey } from '../../src/storage/keys.js';
import { materialText, sameMaterial, validateTrigger } from '../../src/writer/triggers.js';
import { encodeForStorage, encodeForStorageSync, snapshotFromText, type SnapshotHeader } from '../../src/writer/size-limit.js';

/** JSON values savepoint stores: canonical JSON refuses `__proto__` keys anywhere, by design. */
const storableJson = (): fc.Arbitrary<JsonValue> =>
  (fc.oneof(fc.jsonValue(), fc.jsonValue({ stringUnit: 'binary' })) as fc.Arbitrary<JsonValue>).filter(
    (v) => !JSON.stringify(v).includes('"__proto__"'),
  );

const RFC3339_MIN = Date.UTC(2000, 0, 1);
const RFC3339_MAX = Date.UTC(2099, 11, 31);

const triggerRecord = fc.record(
  {
    source: fc.constantFrom('step_boundary', 'error_boundary', 'timer', 'manual'),
    at: fc.integer({ min: RFC3339_MIN, max: RFC3339_MAX }).map((ms) => new Date(ms).toISOString()),
    coalesced_into: fc.string({ minLength: 1, maxLength: 8 }),
  },
  { requiredKeys: ['source', 'at'] },
);

/** Headers the writer builds (and some it never would: a missing member, an empty run id, a wrong sequence). */
const header = fc.record({
  at: fc.integer({ min: RFC3339_MIN, max: RFC3339_MAX }),
  runId: fc.oneof(fc.constantFrom('run-1', 'ünï-run'), fc.string({ maxLength: 12 })),
  sequence: fc.oneof(fc.integer({ min: 1, max: 1_000_000 }), fc.constantFrom(0, -1, 1.5)),
  source: fc.constantFrom('step_boundary', 'error_boundary', 'timer', 'manual'),
  sourceDetails: fc.array(triggerRecord, { maxLength: 3 }),
  priority: fc.option(fc.constantFrom('critical', 'normal', 'high'), { nil: undefined }),
  status: fc.constantFrom('in_progress', 'failed', 'completed', 'paused'),
  badId: fc.boolean(),
});

type HeaderInput = typeof header extends fc.Arbitrary<infer T> ? T : never;

function headerOf(h: HeaderInput): SnapshotHeader<JsonValue> {
  return {
    id: h.badId ? 'not-an-id' : newSnapshotId(h.at),
    runId: h.runId,
    sequence: h.sequence,
    createdAt: new Date(h.at).toISOString(),
    source: h.source,
    sourceDetails: h.sourceDetails,
    ...(h.priority ? { priority: h.priority as 'critical' } : {}),
    status: h.status,
  };
}

const policy = { maxBytes: 10 * 1024 * 1024, onOversize: 'split' as const };

/** What a call returns or throws, comparably. */
async function outcome(run: () => unknown): Promise<{ ok: true; value: unknown } | { ok: false; reason: string }> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    return { ok: false, reason: err.reasonCode };
  }
}

describe('the synchronous hot path seals exactly what the general path seals', () => {
  it('property: encodeForStorageSync gives the bytes and checksum of the profile encode() of the whole snapshot, or the same refusal', async () => {
    await fc.assert(
      fc.asyncProperty(header, storableJson(), async (h, payload) => {
        const draft = headerOf(h);
        const text = canonicalJson(payload);
        const fast = await outcome(() => encodeForStorageSync(defaultProfile, draft, text, policy));
        const general = await outcome(() => defaultProfile.document.encode({ ...draft, payload }));
        const viaAsync = await outcome(() => encodeForStorage(defaultProfile, draft, text, policy));
        if (!general.ok) {
          expect(fast).toEqual(general);
          expect(viaAsync).toEqual(general);
          return;
        }
        const reference = general.value as Awaited<ReturnType<typeof defaultProfile.document.encode>>;
        expect(fast.ok).toBe(true);
        const stored = (fast as { value: Awaited<ReturnType<typeof encodeForStorage<JsonValue>>> }).value;
        expect(Buffer.from(stored.bytes).equals(Buffer.from(reference.bytes))).toBe(true);
        expect(stored.snapshot.integrity).toEqual(reference.snapshot.integrity);
        expect(stored.parts).toEqual([]);
        expect(Buffer.from((viaAsync as { value: { bytes: Uint8Array } }).value.bytes).equals(Buffer.from(reference.bytes))).toBe(true);
        // What was sealed reads back as the snapshot handed out, as JSON carries it (-0 is 0:
        // fc.jsonValue makes some, seed 586122979 did; docs/writing.md).
        const read = await defaultProfile.document.decode(stored.bytes, 'hot-path');
        expect(read).toEqual({ ...stored.snapshot, payload: JSON.parse(text) });
      }),
      { numRuns: 150 },
    );
  });

  it('leaves to the general path what it cannot do alone: a format without the synchronous method, a document over the limit', async () => {
    const draft = headerOf({
      at: RFC3339_MIN,
      runId: 'run-1',
      sequence: 1,
      source: 'manual',
      sourceDetails: [],
      priority: undefined,
      status: 'in_progress',
      badId: false,
    });
    const text = canonicalJson({ note: 'x'.repeat(2000) });
    expect(encodeForStorageSync(defaultProfile, draft, text, { maxBytes: 1000, onOversize: 'split' })).toBeUndefined();
    expect(encodeForStorageSync(defaultProfile, draft, text, { maxBytes: 2100, onOversize: 'reject' })).toBeUndefined();
    const { encodePayloadTextSync: _dropped, ...asyncOnly } = defaultProfile.document;
    const profile: Profile<JsonValue> = { ...defaultProfile, document: asyncOnly };
    expect(encodeForStorageSync(profile, draft, text, policy)).toBeUndefined();
    expect(
      Buffer.from((await encodeForStorage(profile, draft, text, policy)).bytes).equals(
        Buffer.from((await defaultProfile.document.encode({ ...draft, payload: { note: 'x'.repeat(2000) } })).bytes),
      ),
    ).toBe(true);
  });
});

describe("a format of the user's own next to the built-in synchronous sealer", () => {
  it('an encodePayloadText of your own, with the rest of a built-in format spread in, is called: the built-in synchronous sealer never stands in for it', async () => {
    const draft = headerOf({
      at: RFC3339_MIN,
      runId: 'run-1',
      sequence: 1,
      source: 'manual',
      sourceDetails: [],
      priority: undefined,
      status: 'in_progress',
      badId: false,
    });
    const text = canonicalJson({ note: 'mine' });
    let called = 0;
    const builtIn = defaultProfile.document;
    const document: Profile<JsonValue>['document'] = {
      ...builtIn,
      encodePayloadText: async (h, t, pieces) => {
        called++;
        return builtIn.encodePayloadText!(h, t, pieces);
      },
    };
    const profile: Profile<JsonValue> = { ...defaultProfile, document };
    expect(encodeForStorageSync(profile, draft, text, policy)).toBeUndefined();
    await encodeForStorage(profile, draft, text, policy);
    expect(called).toBe(1);
    // The built-in pair itself still takes the synchronous path.
    expect(encodeForStorageSync(defaultProfile, draft, text, policy)).toBeDefined();
  });
});

describe('the snapshot a checkpoint result carries', () => {
  it('property: equals the header, the seal and the payload parsed from the stored text, as plain enumerable members, and is the caller’s to change', () => {
    fc.assert(
      fc.property(header, storableJson(), (h, payload) => {
        const draft = headerOf(h);
        const integrity = { format_version: '1', algorithm: 'sha256' as const, checksum: 'a'.repeat(64) };
        const text = canonicalJson(payload);
        const snapshot = snapshotFromText(draft, integrity, text);
        expect(Object.keys(snapshot).sort()).toEqual([...Object.keys(draft), 'integrity', 'payload'].sort());
        expect(JSON.parse(JSON.stringify(snapshot))).toEqual(JSON.parse(JSON.stringify({ ...draft, integrity, payload })));
        expect({ ...snapshot }).toEqual({ ...draft, integrity, payload: JSON.parse(text) as JsonValue });
        // Its own copies: changing them leaves the header alone, and a payload set stays set.
        snapshot.sourceDetails.push({ source: 'manual', at: '2026-01-01T00:00:00.000Z' });
        expect(draft.sourceDetails).toEqual(h.sourceDetails);
        snapshot.payload = 'replaced';
        expect(snapshot.payload).toBe('replaced');
      }),
      { numRuns: 150 },
    );
  });
});

/** storage/keys.ts's checks as they were before the one-pass check of the usual key: the reference. */
function referenceKeyError(key: string): string | undefined {
  if (key.length === 0) return 'empty';
  if (key.length > 1024) return 'longer than 1024 characters';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'contains a control character';
  if (key.includes('\\')) return 'contains a backslash';
  if (key.startsWith('/')) return 'is absolute';
  if (/^[A-Za-z]:/.test(key)) return 'starts with a drive letter';
  for (const segment of key.split('/')) {
    if (segment === '') return 'has an empty segment';
    if (segment === '.' || segment === '..') return 'has a "." or ".." segment';
    if (new TextEncoder().encode(segment).length > 255) return 'has a segment longer than 255 bytes';
  }
  return undefined;
}

describe('storage keys on the hot path', () => {
  it('property: assertKey accepts exactly the keys the reference checks accept, and words a refusal the same', () => {
    const unit = fc.constantFrom(
      'a',
      'b',
      '/',
      '.',
      '\\',
      ':',
      'C',
      '\u0000',
      '\u001f',
      '\u007f',
      'é',
      '\u{1F600}',
      '-',
      'x'.repeat(40),
      'é'.repeat(60),
    );
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 30 }), (key) => {
        const expected = referenceKeyError(key);
        let actual: string | undefined;
        try {
          assertKey(key);
        } catch (err) {
          if (!isCheckpointError(err, 'checkpoint_key_invalid')) throw err;
          actual = err.message.replace(/^.*invalid storage key: /, '');
        }
        expect(actual).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('material state compared on the hot path', () => {
  it('property: sameMaterial decides exactly as comparing the material keys, for payload-as-material and other views alike', () => {
    const viewing: Profile<JsonValue> = {
      ...defaultProfile,
      materialView: (p: JsonValue) =>
        p !== null && typeof p === 'object' && !Array.isArray(p) && 'volatile' in p ? { ...p, volatile: null } : p,
    };
    const status = fc.constantFrom('in_progress', 'failed');
    // Small pools, so that equal states come up often.
    const payload = fc.oneof(
      fc.constantFrom<JsonValue>({ a: 1 }, { a: 1, volatile: 2 }, { a: 1, volatile: 3 }, [1, 2], 'x', {
        material: { a: 1 },
        status: 'in_progress',
      }),
      storableJson(),
    );
    fc.assert(
      fc.property(fc.boolean(), payload, status, payload, status, (withView, p1, s1, p2, s2) => {
        const profile = withView ? viewing : defaultProfile;
        const a = validateTrigger(profile, { source: 'manual', status: s1, payload: p1 }, 0);
        const b = validateTrigger(profile, { source: 'manual', status: s2, payload: p2 }, 0);
        expect(sameMaterial(a, b)).toBe(a.material === b.material);
        expect(sameMaterial(a, { material: materialText(profile, s2, p2), status: s2 })).toBe(a.material === materialText(profile, s2, p2));
      }),
      { numRuns: 500 },
    );
  });
});
