import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, defaultProfile, isCheckpointError, memoryStorage, parseJson, type JsonObject, type JsonValue } from 'savepoint';
import {
  compileValidator,
  decodeStoredSnapshot,
  gzip,
  newSnapshotId,
  readSnapshot,
  splitDocument,
  resolveParts,
  type SnapshotDraft,
} from 'savepoint/toolkit';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';

const draftArb = fc.record({
  createdAtMs: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }),
  runId: fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/),
  sequence: fc.integer({ min: 1, max: 1_000_000 }),
  source: fc.constantFrom('step_boundary', 'error_boundary', 'timer', 'manual'),
  status: fc.constantFrom('in_progress', 'failed', 'completed', 'paused'),
  coalesced: fc.array(fc.constantFrom('timer', 'manual'), { maxLength: 3 }),
  payload: fc.jsonValue().filter((v) => !JSON.stringify(v).includes('__proto__')),
});

type DraftInput = typeof draftArb extends fc.Arbitrary<infer T> ? T : never;

function toDraft(a: DraftInput): SnapshotDraft<JsonValue> {
  const at = new Date(a.createdAtMs).toISOString();
  return {
    id: newSnapshotId(a.createdAtMs),
    runId: a.runId,
    sequence: a.sequence,
    createdAt: at,
    source: a.source,
    sourceDetails: a.coalesced.map((source) => ({ source, at })),
    status: a.status,
    payload: a.payload as JsonValue,
  };
}

describe('default profile document', () => {
  it('snapshot → document → snapshot is the identity, and the document validates (property)', async () => {
    const validate = compileValidator(defaultProfile.document.jsonSchema);
    await fc.assert(
      fc.asyncProperty(draftArb, async (a) => {
        const draft = toDraft(a);
        const { bytes, snapshot } = await defaultProfile.document.encode(draft);
        expect(validate(JSON.parse(utf8Decode(bytes)))).toEqual([]);
        const back = await defaultProfile.document.decode(bytes, 'x');
        // JSON has no -0: the stored (and decoded) payload is the canonical one, 0 for -0.
        expect(back).toEqual({ ...snapshot, payload: JSON.parse(canonicalJson(snapshot.payload)) });
        expect(canonicalJson(back.payload)).toBe(canonicalJson(draft.payload));
        // gzip is transparent
        expect(await defaultProfile.document.decode(gzip(bytes), 'x.gz')).toEqual(back);
      }),
      { numRuns: 60 },
    );
  });

  it('writes the snapshot-lifecycle field names', async () => {
    const { bytes } = await defaultProfile.document.encode({
      id: newSnapshotId(0),
      runId: 'r1',
      sequence: 1,
      createdAt: '1970-01-01T00:00:00.000Z',
      source: 'manual',
      sourceDetails: [],
      status: 'in_progress',
      payload: { step: 1 },
    });
    const doc = JSON.parse(utf8Decode(bytes)) as Record<string, unknown>;
    expect(Object.keys(doc).sort()).toEqual([
      'created_at',
      'integrity',
      'run_id',
      'sequence',
      'snapshot_id',
      'source',
      'source_details',
      'state',
      'status',
    ]);
    expect(doc.snapshot_id).toMatch(/^cp_19700101T000000000Z_[0-9a-z]{10}$/);
    expect(doc.integrity).toMatchObject({ format_version: '1.0', algorithm: 'sha256' });
  });

  it('any changed field is an integrity mismatch; a schema break is schema_invalid', async () => {
    const { bytes } = await defaultProfile.document.encode({
      id: newSnapshotId(0),
      runId: 'r1',
      sequence: 3,
      createdAt: '1970-01-01T00:00:00.000Z',
      source: 'manual',
      sourceDetails: [],
      status: 'in_progress',
      payload: { step: 1 },
    });
    const doc = parseJson(utf8Decode(bytes)) as JsonObject;
    for (const [field, value] of [
      ['status', 'completed'],
      ['sequence', 4],
      ['state', { step: 2 }],
      ['run_id', 'r2'],
    ] as const) {
      const tampered = utf8Encode(JSON.stringify({ ...doc, [field]: value }));
      await expect(defaultProfile.document.decode(tampered, 'latest.json')).rejects.toMatchObject({
        reasonCode: 'checkpoint_integrity_mismatch',
      });
    }
    await expect(
      defaultProfile.document.decode(utf8Encode(JSON.stringify({ ...doc, status: 'exploded' })), 'latest.json'),
    ).rejects.toMatchObject({
      reasonCode: 'checkpoint_schema_invalid',
    });
    const { integrity: _i, ...noIntegrity } = doc;
    await expect(defaultProfile.document.decode(utf8Encode(JSON.stringify(noIntegrity)), 'latest.json')).rejects.toMatchObject({
      reasonCode: 'checkpoint_schema_invalid',
    });
    // Key order and whitespace do not matter: the checksum is over canonical JSON.
    const pretty = utf8Encode(JSON.stringify(JSON.parse(utf8Decode(bytes)), null, 2));
    await expect(defaultProfile.document.decode(pretty, 'latest.json')).resolves.toMatchObject({ sequence: 3 });
  });

  it('refuses to encode a payload JSON cannot carry', async () => {
    await expect(
      defaultProfile.document.encode({
        id: newSnapshotId(0),
        runId: 'r1',
        sequence: 1,
        createdAt: '1970-01-01T00:00:00.000Z',
        source: 'manual',
        sourceDetails: [],
        status: 'in_progress',
        payload: { bad: NaN } as unknown as JsonValue,
      }),
    ).rejects.toSatisfy((e) => isCheckpointError(e, 'checkpoint_schema_invalid'));
  });
});

describe('part files', () => {
  it('split then resolve gives back the document, and the main file fits (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ minLength: 0, maxLength: 300 }), { maxLength: 60 }),
        fc.dictionary(
          fc.string({ minLength: 1, maxLength: 5 }).filter((k) => k !== '__proto__' && !k.startsWith('$')),
          fc.array(fc.integer(), { maxLength: 80 }),
          { maxKeys: 8 },
        ),
        fc.integer({ min: 1200, max: 4000 }),
        async (list, dict, max) => {
          const document: JsonObject = { snapshot_id: 'x', list, dict, integrity: { checksum: 'c' } };
          const { main, parts } = await splitDocument(document, max, (n) => `p/${n}.json`);
          expect(utf8Encode(canonicalJson(main)).length).toBeLessThanOrEqual(max);
          for (const p of parts) expect(p.data.length).toBeLessThanOrEqual(max);
          const files = new Map(parts.map((p) => [p.key, parseJson(utf8Decode(p.data))]));
          expect(await resolveParts(main, async (k) => files.get(k))).toEqual(document);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('readSnapshot reassembles a split snapshot and checks each part', async () => {
    const storage = memoryStorage();
    const big = Array.from({ length: 400 }, (_, i) => ({ i, text: 'x'.repeat(50) }));
    const { bytes } = await defaultProfile.document.encode({
      id: newSnapshotId(0),
      runId: 'r1',
      sequence: 1,
      createdAt: '1970-01-01T00:00:00.000Z',
      source: 'manual',
      sourceDetails: [],
      status: 'in_progress',
      payload: { big },
    });
    const { main, parts } = await splitDocument(
      parseJson(utf8Decode(bytes)) as JsonObject,
      4096,
      (n) => `checkpoints/r1/parts/1/${n}.json`,
    );
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) await storage.put(p.key, p.data, { ifAbsent: true });
    await storage.put('checkpoints/r1/latest.json', utf8Encode(canonicalJson(main)));
    const snap = await readSnapshot(storage, defaultProfile, 'checkpoints/r1/latest.json');
    expect(snap?.payload).toEqual({ big });

    await storage.put(parts[0]!.key, utf8Encode('[]'));
    await expect(readSnapshot(storage, defaultProfile, 'checkpoints/r1/latest.json')).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
    await storage.delete(parts[0]!.key);
    await expect(decodeStoredSnapshot(storage, defaultProfile, 'k', utf8Encode(canonicalJson(main)))).rejects.toMatchObject({
      reasonCode: 'checkpoint_not_found',
    });
  });

  it('refuses an unsplittable value over the limit with checkpoint_too_large', async () => {
    await expect(splitDocument({ s: 'x'.repeat(5000) }, 1000, (n) => `p/${n}`)).rejects.toMatchObject({
      reasonCode: 'checkpoint_too_large',
    });
  });
});
