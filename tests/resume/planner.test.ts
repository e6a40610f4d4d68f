import { describe, expect, it } from 'vitest';
import {
  defaultProfile,
  isCheckpointError,
  memoryStorage,
  planResume,
  canonicalJson,
  parseJson,
  type Clock,
  type JsonObject,
  type StorageAdapter,
} from 'savepoint';
import { encodeRunIndex, gzip, splitDocument } from 'savepoint/toolkit';
import { encodeBatchFile } from '../../src/snapshot-io/batch-file.js';
import { utf8Encode, utf8Decode } from '../../src/codec/utf8.js';
import { faultyStorage } from 'savepoint/testing';
import { compressEntry, corrupt, encodeSnapshot, flipBit, indexEntry, putIndex, writeRun } from '../support/runs.js';
import { defaultState, phasedState, phasedTestProfile } from '../support/profiles.js';
import { T0 } from '../support/clock.js';

const RUN = 'run-1';
const clockAt = (ms: number): Clock => ({ now: () => ms, setTimeout: () => 0, clearTimeout: () => undefined });
const fresh = clockAt(T0 + 10 * 60_000);

async function expectError(p: Promise<unknown>, code: string): Promise<Record<string, unknown>> {
  try {
    await p;
  } catch (err) {
    expect(isCheckpointError(err)).toBe(true);
    expect((err as { reasonCode: string }).reasonCode).toBe(code);
    return (err as { details: Record<string, unknown> }).details;
  }
  throw new Error(`expected ${code}`);
}

const gets = (s: ReturnType<typeof faultyStorage>): string[] => s.log.filter((r) => r.operation === 'get').map((r) => r.keys[0]!);
const lists = (s: ReturnType<typeof faultyStorage>): number => s.log.filter((r) => r.operation === 'list').length;

describe('planResume: finding the snapshot', () => {
  it('happy path: a valid latest, read in O(1) (default profile: latest + writer lock, no listing)', async () => {
    const inner = memoryStorage();
    await writeRun(inner, defaultProfile, RUN, 5, defaultState);
    const storage = faultyStorage(inner);
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(5);
    expect(plan.payload).toEqual(defaultState(5));
    expect(plan.source).toEqual({ key: 'checkpoints/run-1/latest.json', origin: 'latest', latest: 'valid' });
    expect(plan.skipped).toEqual([]);
    expect(plan.nextSequence).toBe(6);
    expect(gets(storage)).toEqual(['checkpoints/run-1/latest.json', 'checkpoints/run-1/.savepoint-lock.json']);
    expect(lists(storage)).toBe(0);
  });

  it('happy path on a derivable layout: latest + one probe per trigger for the next sequence, no listing', async () => {
    const inner = memoryStorage();
    await writeRun(inner, phasedTestProfile, RUN, 4, (n) => phasedState(n), { source: () => 'phase_complete' });
    const storage = faultyStorage(inner);
    // The locate's cost alone: the rule without its history read (tests/profiles/phased-workflow/resume-names.test.ts).
    const rule = (
      s: Parameters<NonNullable<typeof phasedTestProfile.resume>>[0],
      c: Parameters<NonNullable<typeof phasedTestProfile.resume>>[1],
    ) => phasedTestProfile.resume!(s, c);
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh, rule });
    expect(plan.snapshot.sequence).toBe(4);
    expect(lists(storage)).toBe(0);
    const probed = gets(storage).slice(1);
    expect(probed).toContain('checkpoints/run-1/cp_005_phase_complete.json');
    expect(probed).toContain('checkpoints/run-1/cp_005_gate_decision.json.gz');
    expect(probed).toHaveLength(9 * 2);
  });

  it('missing latest → the index’s highest sequence', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 6, defaultState);
    await storage.delete(defaultProfile.layout.latestKey(RUN));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(6);
    expect(plan.source).toMatchObject({ origin: 'index', latest: 'missing' });
    expect(plan.warnings.map((w) => w.code)).toContain('resume_latest_missing');
  });

  it('missing latest: the index’s highest entry is opened, then the same O(1) newer check; no listing', async () => {
    const inner = memoryStorage();
    const { written } = await writeRun(inner, defaultProfile, RUN, 30, defaultState);
    await inner.delete(defaultProfile.layout.latestKey(RUN));
    const storage = faultyStorage(inner);
    await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    const layout = defaultProfile.layout;
    expect(gets(storage)).toEqual([layout.latestKey(RUN), layout.indexKey!(RUN), written[29]!.historyKey, layout.lockKey(RUN)]);
    expect(lists(storage)).toBe(0);
  });

  it('missing latest and a stale index (crash before both writes): the probe from the index’s top finds the newer entry', async () => {
    const storage = memoryStorage();
    await writeRun(storage, phasedTestProfile, RUN, 6, (n) => phasedState(n), { latestAt: 5, index: 5, source: () => 'iteration' });
    await storage.delete(phasedTestProfile.layout.latestKey(RUN));
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(6);
    expect(plan.source).toMatchObject({ origin: 'probe', latest: 'missing' });
  });

  it('an index whose top entry names a file that fails validation → the history scan', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, defaultProfile, RUN, 5, defaultState);
    await storage.delete(defaultProfile.layout.latestKey(RUN));
    await corrupt(storage, written[4]!.historyKey, (b) => flipBit(b, 999));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(4);
    expect(plan.source.origin).toBe('index');
    expect(plan.skipped.map((s) => s.key)).toEqual([written[4]!.historyKey]);
  });

  it('corrupt latest (a flipped bit) is skipped with its reason code; the newest history entry wins', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 3, defaultState);
    const latestKey = defaultProfile.layout.latestKey(RUN);
    await corrupt(storage, latestKey, (b) => flipBit(b, 8 * 60 + 1));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(3);
    expect(plan.skipped).toEqual([expect.objectContaining({ key: latestKey, kind: 'latest' })]);
    expect(['checkpoint_integrity_mismatch', 'checkpoint_schema_invalid']).toContain(plan.skipped[0]!.reasonCode);
    expect(plan.warnings.map((w) => w.code)).toEqual(expect.arrayContaining(['resume_latest_invalid', 'resume_files_skipped']));
  });

  it('corrupt latest whose content was altered but still parses → checkpoint_integrity_mismatch', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 3, defaultState);
    const latestKey = defaultProfile.layout.latestKey(RUN);
    await corrupt(storage, latestKey, (b) => {
      const doc = parseJson(utf8Decode(b)) as JsonObject;
      (doc.state as JsonObject).step = 99;
      return utf8Encode(canonicalJson(doc));
    });
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(3);
    expect(plan.payload).toEqual(defaultState(3));
    expect(plan.skipped[0]).toMatchObject({ key: latestKey, reasonCode: 'checkpoint_integrity_mismatch' });
  });

  it('corrupt latest and corrupt index → history scan, both reported', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 4, defaultState);
    await corrupt(storage, defaultProfile.layout.latestKey(RUN), (b) => b.slice(0, 20));
    await corrupt(storage, defaultProfile.layout.indexKey!(RUN), (b) => b.slice(0, b.length - 3));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(4);
    expect(plan.source.origin).toBe('scan');
    expect(plan.skipped.map((s) => [s.kind, s.reasonCode])).toEqual([
      ['latest', 'checkpoint_schema_invalid'],
      ['index', 'checkpoint_schema_invalid'],
    ]);
  });

  it('scan orders id-named history by the sequence inside the documents, not by name', async () => {
    const storage = memoryStorage();
    // Clock went backwards for the newest snapshot: its id (timestamp) sorts first by name.
    await writeRun(storage, defaultProfile, RUN, 4, defaultState, {
      index: false,
      createdAtMs: (n) => (n === 4 ? T0 - 3_600_000 : T0 + n * 1000),
    });
    await storage.delete(defaultProfile.layout.latestKey(RUN));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(4);
  });

  it('a truncated gzip history entry is checkpoint_integrity_mismatch; the next older entry wins', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, defaultProfile, RUN, 3, defaultState);
    for (const w of written) await compressEntry(storage, w.historyKey);
    await storage.delete(defaultProfile.layout.latestKey(RUN));
    const gz = `${written[2]!.historyKey}.gz`;
    await corrupt(storage, gz, (b) => b.slice(0, b.length - 5));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(2);
    expect(plan.source.key).toBe(`${written[1]!.historyKey}.gz`);
    expect(plan.skipped).toEqual([expect.objectContaining({ key: gz, kind: 'history', reasonCode: 'checkpoint_integrity_mismatch' })]);
  });

  it('an index naming the plain key of an entry since gzipped still finds it', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, defaultProfile, RUN, 2, defaultState);
    await compressEntry(storage, written[1]!.historyKey);
    await storage.delete(defaultProfile.layout.latestKey(RUN));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(2);
    expect(plan.source.key).toBe(`${written[1]!.historyKey}.gz`);
  });

  it('stale latest on a derivable layout (crash between history and latest): the probe finds the newer entry', async () => {
    const storage = memoryStorage();
    await writeRun(storage, phasedTestProfile, RUN, 5, (n) => phasedState(n), {
      latestAt: 4,
      index: 4,
      source: (n) => (n === 5 ? 'gate_decision' : 'phase_complete'),
    });
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(5);
    expect(plan.source).toMatchObject({ origin: 'probe', latest: 'stale', key: 'checkpoints/run-1/cp_005_gate_decision.json' });
    expect(plan.warnings.map((w) => w.code)).toContain('resume_latest_stale');
    expect(plan.at).toBe('phase_3_work_gate');
    expect(plan.nextSequence).toBe(6);
  });

  it('stale latest on an id-named layout: a writer lock left behind by the crash triggers the scan', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 5, defaultState, { latestAt: 4, index: 4 });
    await storage.put(defaultProfile.layout.lockKey(RUN), utf8Encode('{"owner":"dead-process"}'));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(5);
    expect(plan.source).toMatchObject({ origin: 'scan', latest: 'stale' });
  });

  it('stale latest on an id-named layout without a lock: trusted by default (documented), found with newerCheck scan', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 5, defaultState, { latestAt: 4, index: 4 });
    expect((await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh })).snapshot.sequence).toBe(4);
    expect((await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh, newerCheck: 'scan' })).snapshot.sequence).toBe(
      5,
    );
  });

  it('an index ahead of latest (a failed latest write the writer survived) is found by the scan', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 5, defaultState, { latestAt: 3 });
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh, newerCheck: 'scan' });
    expect(plan.snapshot.sequence).toBe(5);
    expect(plan.source.origin).toBe('index');
  });

  it('every file corrupt → checkpoint_no_valid_snapshot listing what was skipped', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, defaultProfile, RUN, 3, defaultState);
    await corrupt(storage, defaultProfile.layout.latestKey(RUN), (b) => flipBit(b, 100));
    for (const w of written) await corrupt(storage, w.historyKey, (b) => b.slice(0, b.length >> 1));
    const details = await expectError(
      planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh }),
      'checkpoint_no_valid_snapshot',
    );
    expect(details).toMatchObject({ runId: RUN, skipped: 4 });
    expect(details.keys).toEqual(expect.arrayContaining(written.map((w) => w.historyKey)));
  });

  it('a run with no files at all → checkpoint_not_found', async () => {
    await expectError(
      planResume({ storage: memoryStorage(), profile: defaultProfile, runId: 'nobody', clock: fresh }),
      'checkpoint_not_found',
    );
  });

  it('an invalid run id → checkpoint_key_invalid before any read', async () => {
    const storage = faultyStorage(memoryStorage());
    await expectError(planResume({ storage, profile: defaultProfile, runId: '../etc', clock: fresh }), 'checkpoint_key_invalid');
    expect(storage.count).toBe(0);
  });

  it('a storage failure is thrown, not mistaken for a corrupt file', async () => {
    const inner = memoryStorage();
    await writeRun(inner, defaultProfile, RUN, 3, defaultState);
    await inner.delete(defaultProfile.layout.latestKey(RUN));
    const storage = faultyStorage(inner, {
      at: (op) => (op.operation === 'get' && op.keys[0]!.includes('/history/') ? 'fail' : undefined),
    });
    await expectError(planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh }), 'checkpoint_storage_unavailable');
  });

  it('a history file whose name and content disagree is skipped as checkpoint_schema_invalid (an identity error, not a broken seal)', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, phasedTestProfile, RUN, 3, (n) => phasedState(n), { index: false, source: () => 'manual' });
    await storage.delete(phasedTestProfile.layout.latestKey(RUN));
    // A copy of snapshot 1 under the name of sequence 9.
    await storage.put('checkpoints/run-1/cp_009_manual.json', written[0]!.bytes);
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(3);
    expect(plan.skipped).toEqual([
      expect.objectContaining({ key: 'checkpoints/run-1/cp_009_manual.json', reasonCode: 'checkpoint_schema_invalid' }),
    ]);
    expect(plan.nextSequence).toBe(10);
  });

  it('a latest copied from another run is skipped', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 2, defaultState);
    const other = await encodeSnapshot(defaultProfile, 'run-2', 7, defaultState(7));
    await storage.put(defaultProfile.layout.latestKey(RUN), other.bytes);
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(2);
    expect(plan.skipped[0]).toMatchObject({ kind: 'latest', reasonCode: 'checkpoint_schema_invalid' });
  });

  it('an index entry that lies about its sequence is caught when read; the answer stays exact', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, defaultProfile, RUN, 4, defaultState);
    await storage.delete(defaultProfile.layout.latestKey(RUN));
    // Ascending, ids agree with the file names, but the entry of snapshot 2 claims sequence 9.
    await putIndex(storage, defaultProfile, RUN, [
      indexEntry(written[0]!),
      { ...indexEntry(written[1]!), sequence: 9 },
      indexEntry(written[2]!),
      indexEntry(written[3]!),
    ]);
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(4);
    expect(plan.skipped).toEqual([expect.objectContaining({ kind: 'index', reasonCode: 'checkpoint_integrity_mismatch' })]);
    expect(plan.skipped[0]!.message).toMatch(/says sequence 9, the file holds 2/);
  });

  it('an index out of order, or naming another snapshot than its file, is not used for ordering', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, defaultProfile, RUN, 4, defaultState);
    await storage.delete(defaultProfile.layout.latestKey(RUN));
    const entries = written.map((w) => indexEntry(w));
    const index = {
      run_id: RUN,
      checkpoint_count: 4,
      checkpoints: [entries[0]!, entries[2]!, entries[1]!, entries[3]!],
      last_updated: '2026-01-16T00:00:00.000Z',
    };
    await storage.put(defaultProfile.layout.indexKey!(RUN), encodeRunIndex(index));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(4);
    expect(plan.source.origin).toBe('scan');
    expect(plan.skipped[0]).toMatchObject({ kind: 'index', reasonCode: 'checkpoint_integrity_mismatch' });

    await putIndex(storage, defaultProfile, RUN, [...entries.slice(0, 3), { ...entries[3]!, checkpoint_id: written[0]!.snapshot.id }]);
    const again = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(again.snapshot.sequence).toBe(4);
    expect(again.skipped[0]).toMatchObject({ kind: 'index', reasonCode: 'checkpoint_integrity_mismatch' });
  });

  it('an index entry pointing at a batch file: the member with that sequence is restored', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, phasedTestProfile, RUN, 2, (n) => phasedState(n), { source: () => 'phase_complete' });
    const members = [];
    for (const n of [3, 4, 5]) members.push(await encodeSnapshot(phasedTestProfile, RUN, n, phasedState(n), { source: 'expensive_op' }));
    const batchKey = phasedTestProfile.layout.batchKey!(RUN, 3, 5);
    await storage.put(batchKey, encodeBatchFile(members.map((m) => ({ sequence: m.snapshot.sequence, bytes: m.bytes }))));
    await putIndex(storage, phasedTestProfile, RUN, [...written.map((w) => indexEntry(w)), ...members.map((m) => indexEntry(m, batchKey))]);
    await storage.delete(phasedTestProfile.layout.latestKey(RUN));
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(5);
    expect(plan.source).toMatchObject({ key: batchKey, batchPosition: 2, origin: 'index' });
  });

  it('a batch file with one corrupt member: the member is skipped as <key>#<position>, the others count', async () => {
    const storage = memoryStorage();
    const members = [];
    for (const n of [1, 2, 3]) members.push(await encodeSnapshot(phasedTestProfile, RUN, n, phasedState(n), { source: 'manual' }));
    const text = utf8Decode(encodeBatchFile(members.map((m) => ({ sequence: m.snapshot.sequence, bytes: m.bytes }))));
    const doc = parseJson(text) as { checkpoints: JsonObject[] };
    (doc.checkpoints[2]!.state_snapshot as JsonObject).cost_accumulated = 1000;
    const batchKey = phasedTestProfile.layout.batchKey!(RUN, 1, 3);
    await storage.put(batchKey, utf8Encode(canonicalJson(doc as unknown as JsonObject)));
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh });
    expect(plan.snapshot.sequence).toBe(2);
    expect(plan.skipped).toEqual([
      expect.objectContaining({ key: `${batchKey}#2`, kind: 'batch', reasonCode: 'checkpoint_integrity_mismatch' }),
    ]);
  });

  it('an oversized snapshot stored with part files is reassembled; a missing part skips it as checkpoint_not_found', async () => {
    const storage = memoryStorage();
    const big = { step: 2, log: Array.from({ length: 200 }, (_, i) => `line ${i} `.repeat(10)) };
    const { written } = await writeRun(storage, defaultProfile, RUN, 2, (n) => (n === 2 ? big : defaultState(n)));
    const w = written[1]!;
    const ref = { runId: RUN, id: w.snapshot.id, sequence: 2, source: w.snapshot.source };
    const { main, parts } = await splitDocument(parseJson(utf8Decode(w.bytes)) as JsonObject, 4096, (n) =>
      defaultProfile.layout.partKey!(ref, `${n}.json`),
    );
    expect(parts.length).toBeGreaterThan(0);
    for (const p of parts) await storage.put(p.key, p.data);
    await storage.put(w.historyKey, utf8Encode(canonicalJson(main)));
    await storage.put(defaultProfile.layout.latestKey(RUN), utf8Encode(canonicalJson(main)));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan.payload).toEqual(big);
    await storage.delete(parts[0]!.key);
    const fallback = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(fallback.snapshot.sequence).toBe(1);
    expect(fallback.skipped.map((s) => s.reasonCode)).toEqual(['checkpoint_not_found', 'checkpoint_not_found']);
  });

  it('gzip is transparent for latest too (written by another tool)', async () => {
    const storage = memoryStorage();
    const w = await encodeSnapshot(defaultProfile, RUN, 1, defaultState(1));
    await storage.put(defaultProfile.layout.latestKey(RUN), gzip(w.bytes));
    expect((await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh })).snapshot.sequence).toBe(1);
  });
});

describe('planResume: rules and warnings', () => {
  async function phasedRun(storage: StorageAdapter, lessons = ['L-1', 'L-2']): Promise<void> {
    await writeRun(storage, phasedTestProfile, RUN, 3, (n) => phasedState(n, lessons), {
      source: (n) => (n === 3 ? 'phase_complete' : 'manual'),
    });
  }

  it('uses the profile’s rule: phased RESUME message, restored state, completed and remaining', async () => {
    const storage = memoryStorage();
    await phasedRun(storage);
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh });
    expect(plan).toMatchObject({
      at: 'phase_2',
      reason: 'phase_complete_next_phase',
      eligible: true,
      completed: ['phase_0', 'phase_0_5', 'phase_1'],
    });
    expect(plan.remaining).toEqual(['phase_2', 'phase_3', 'phase_4', 'phase_5', 'phase_6', 'phase_7', 'phase_8']);
    expect(plan.message).toMatch(
      /^RESUME: Continuing run run-1 from checkpoint [0-9a-f-]{36}\nResume point: phase_2\nPhases completed: phase_0, phase_0_5, phase_1\nCost so far: \$1\.50$/,
    );
    expect(plan.restored).toMatchObject({
      cost_accumulated: 1.5,
      active_lessons: ['L-1', 'L-2'],
      circuit_breaker_state: { github: 'closed' },
    });
  });

  it('a rule passed in options overrides the profile’s', async () => {
    const storage = memoryStorage();
    await phasedRun(storage);
    const plan = await planResume({
      storage,
      profile: phasedTestProfile,
      runId: RUN,
      clock: fresh,
      rule: (s) => ({ at: `custom-${s.sequence}`, reason: 'custom', explanation: 'mine', eligible: true, completed: [], remaining: [] }),
    });
    expect(plan.at).toBe('custom-3');
  });

  it('a profile without a rule gets the generic plan: resume after the newest snapshot', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 2, defaultState);
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: fresh });
    expect(plan).toMatchObject({ at: plan.snapshot.id, reason: 'continue_after_snapshot', eligible: true });
  });

  it('time_sensitivity: a snapshot older than staleAfterMs → resume_snapshot_stale', async () => {
    const storage = memoryStorage();
    await phasedRun(storage);
    const created = T0 + 3 * 60_000;
    const young = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: clockAt(created + 59 * 60_000) });
    expect(young.warnings.map((w) => w.code)).not.toContain('resume_snapshot_stale');
    const old = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: clockAt(created + 61 * 60_000) });
    expect(old.ageMs).toBe(61 * 60_000);
    expect(old.warnings.find((w) => w.code === 'resume_snapshot_stale')).toMatchObject({
      details: { ageMs: 61 * 60_000, staleAfterMs: 3_600_000 },
    });
    const custom = await planResume({
      storage,
      profile: phasedTestProfile,
      runId: RUN,
      clock: clockAt(created + 11_000),
      staleAfterMs: 10_000,
    });
    expect(custom.warnings.map((w) => w.code)).toContain('resume_snapshot_stale');
  });

  it('lesson_changes: current lessons that differ → resume_lessons_changed with counts; the same set in another order → none', async () => {
    const storage = memoryStorage();
    await phasedRun(storage, ['L-1', 'L-2']);
    const same = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh, currentLessons: ['L-2', 'L-1'] });
    expect(same.warnings.map((w) => w.code)).not.toContain('resume_lessons_changed');
    const changed = await planResume({
      storage,
      profile: phasedTestProfile,
      runId: RUN,
      clock: fresh,
      currentLessons: ['L-1', 'L-3', 'L-4'],
    });
    expect(changed.warnings.find((w) => w.code === 'resume_lessons_changed')).toMatchObject({ details: { added: 2, removed: 1 } });
  });

  it('external_state: always warned (with the rule’s counts), unless turned off', async () => {
    const storage = memoryStorage();
    await phasedRun(storage);
    const plan = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh });
    expect(plan.warnings.at(-1)).toMatchObject({ code: 'resume_external_state' });
    const quiet = await planResume({ storage, profile: phasedTestProfile, runId: RUN, clock: fresh, warnExternalState: false });
    expect(quiet.warnings.map((w) => w.code)).not.toContain('resume_external_state');
  });

  it('a terminal status and a snapshot from the future are warned', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, RUN, 2, defaultState, { status: (n) => (n === 2 ? 'completed' : 'in_progress') });
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: clockAt(T0) });
    expect(plan.eligible).toBe(false);
    expect(plan.warnings.map((w) => w.code)).toEqual(expect.arrayContaining(['resume_run_terminal', 'resume_clock_skew']));
  });

  it('no warning or skipped entry carries payload contents', async () => {
    const storage = memoryStorage();
    const secret = 'sk-live-SECRET-0123456789';
    await writeRun(storage, defaultProfile, RUN, 3, (n) => ({ token: secret, n }));
    await corrupt(storage, defaultProfile.layout.latestKey(RUN), (b) => flipBit(b, 8 * 200));
    const plan = await planResume({ storage, profile: defaultProfile, runId: RUN, clock: clockAt(T0 + 10 ** 9), currentLessons: [] });
    expect(JSON.stringify([plan.warnings, plan.skipped])).not.toContain('SECRET');
  });
});
