/**
 * snapshot-lifecycle.md names `source_details` itself ("append trigger source to
 * `source_details`") without a shape. A file another tool wrote with any of its plausible
 * shapes — the spec-literal `["timer"]`, `[{ "source": "timer" }]`, or savepoint's own
 * `[{ source, at }]` without a seal — is another tool's file: read with a warning, never
 * refused as "savepoint sealed this file", and its run is listed by `findIncompleteRuns`.
 */
import { describe, expect, it } from 'vitest';
import { findIncompleteRuns, memoryStorage, planResume } from 'savepoint';
import { decodeStoredSnapshotTolerant } from 'savepoint/toolkit';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { foreignFixture } from '../../support/foreign.js';
import { utf8Encode } from '../../../src/codec/utf8.js';

const RUN = 'sess-2026-01-15-a';

const SHAPES: Record<string, unknown> = {
  'the spec-literal ["timer"]': ['timer'],
  '[{ source }]': [{ source: 'timer' }],
  "savepoint's own [{ source, at }] without a seal": [{ source: 'timer', at: '2026-01-15T14:30:01Z' }],
  'an empty array': [],
};

async function runWith(sourceDetails: unknown, extra: Record<string, unknown> = {}) {
  const storage = memoryStorage();
  const doc = { ...JSON.parse(foreignFixture('snapshot-lifecycle', 'latest.spec.json')), source_details: sourceDetails, ...extra };
  const id = doc.snapshot_id as string;
  await storage.put(snapshotLifecycle.layout.latestKey(RUN), utf8Encode(JSON.stringify(doc)));
  await storage.put(`checkpoints/${RUN}/history/${id}.json`, utf8Encode(JSON.stringify(doc)));
  return storage;
}

describe("snapshotLifecycle reads another tool's source_details in any shape", () => {
  for (const [name, shape] of Object.entries(SHAPES)) {
    it(`${name}: resumed as another tool's file, listed as incomplete, no integrity mismatch (regression)`, async () => {
      const storage = await runWith(shape);
      const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN });
      expect(plan.skipped).toEqual([]);
      expect(plan.source.latest).toBe('valid');
      expect(plan.warnings.map((w) => w.code)).toContain('checkpoint_foreign_seal'); // the fixture carries the spec's own integrity
      expect(plan.warnings.map((w) => w.code)).not.toContain('checkpoint_integrity_mismatch');
      expect(plan.snapshot.sourceDetails.map((d) => d.source)).toEqual(Array.isArray(shape) && shape.length > 0 ? ['timer'] : []);
      for (const d of plan.snapshot.sourceDetails) expect(Number.isNaN(Date.parse(d.at))).toBe(false);
      const runs = await findIncompleteRuns({ storage, profile: snapshotLifecycle });
      expect(runs.map((r) => r.runId)).toEqual([RUN]);
    });
  }

  it('another tool\'s integrity block of the spec\'s shape beside ["timer"] is a foreign seal, not a mismatch (regression)', async () => {
    const storage = await runWith(['timer'], { integrity: { format_version: '1', algorithm: 'sha256', checksum: 'a'.repeat(64) } });
    const key = snapshotLifecycle.layout.latestKey(RUN);
    const read = await decodeStoredSnapshotTolerant(storage, snapshotLifecycle, key, (await storage.get(key))!.bytes);
    expect(read.warnings).toEqual(['checkpoint_foreign_seal', 'checkpoint_sequence_derived']); // the spec has no sequence
  });

  it("a file with savepoint's sequence and source_details and a wrong checksum is still refused (the tamper check stays)", async () => {
    const storage = await runWith([{ source: 'timer', at: '2026-01-15T14:30:01Z' }], {
      sequence: 3,
      integrity: { format_version: '1', algorithm: 'sha256', checksum: 'a'.repeat(64) },
    });
    const key = snapshotLifecycle.layout.latestKey(RUN);
    await expect(decodeStoredSnapshotTolerant(storage, snapshotLifecycle, key, (await storage.get(key))!.bytes)).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
  });
});

it("savepoint's own source_details without any integrity member is read as unsealed (regression)", async () => {
  const storage = memoryStorage();
  const { integrity: _i, ...doc } = JSON.parse(foreignFixture('snapshot-lifecycle', 'latest.spec.json'));
  const full = { ...doc, source_details: [{ source: 'timer', at: '2026-01-15T14:30:01Z' }] };
  await storage.put(snapshotLifecycle.layout.latestKey(RUN), utf8Encode(JSON.stringify(full)));
  const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN });
  expect(plan.warnings.map((w) => w.code)).toContain('checkpoint_unsealed');
  expect((await findIncompleteRuns({ storage, profile: snapshotLifecycle })).map((r) => r.runId)).toEqual([RUN]);
});
