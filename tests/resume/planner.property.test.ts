/**
 * DESIGN.md invariants 1, 2 and 5 as seen by the planner: whatever damage a run's files
 * suffered (bit flips, truncation, deleted files, a stale latest, a damaged index), the
 * planner returns exactly the newest valid snapshot, or `checkpoint_no_valid_snapshot`
 * when none is valid — and never reports a sound file as skipped.
 *
 * Stores are built the way the writer lays them out, with `profile.document.encode` and
 * `storage.put`. The oracle decides validity independently of the code under test: a
 * plain file is valid iff its bytes are unchanged (canonical JSON with a whole-document
 * checksum turns any single flip or cut into a schema or checksum failure); a gzip file
 * iff node:zlib inflates it to the original bytes; a batch member iff the envelope still
 * has its exact shape and the member's JSON is unchanged.
 */
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, defaultProfile, isCheckpointError, memoryStorage, planResume, type Profile, type StorageAdapter } from 'savepoint';
import { gzip, toRfc3339 } from 'savepoint/toolkit';
import { encodeBatchFile } from '../../src/snapshot-io/batch-file.js';
import { defaultState, PHASED_TRIGGERS, phasedState, phasedTestProfile } from '../support/profiles.js';
import { encodeSnapshot, indexEntry, putIndex, type Written } from '../support/runs.js';
import { T0 } from '../support/clock.js';

const RUN = 'prop-run';
type Damage = { kind: 'none' } | { kind: 'flip'; at: number } | { kind: 'truncate'; at: number } | { kind: 'delete' };

const damage: fc.Arbitrary<Damage> = fc.oneof(
  { weight: 5, arbitrary: fc.constant<Damage>({ kind: 'none' }) },
  { weight: 2, arbitrary: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }).map<Damage>((at) => ({ kind: 'flip', at })) },
  { weight: 1, arbitrary: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }).map<Damage>((at) => ({ kind: 'truncate', at })) },
  { weight: 1, arbitrary: fc.constant<Damage>({ kind: 'delete' }) },
);

interface Scenario {
  readonly phased: boolean;
  readonly count: number;
  /** Sequence latest holds (0: never written). */
  readonly latestAt: number;
  /** Index covers 1..indexUpTo (-1: no index file). */
  readonly indexUpTo: number;
  readonly gz: boolean[];
  readonly sources: number[];
  /** Sequences [from, to] stored in one batch file instead of history entries. */
  readonly batch: [number, number] | undefined;
  readonly lock: boolean;
  readonly latestDamage: Damage;
  readonly indexDamage: Damage;
  readonly fileDamage: Damage[];
}

const scenario: fc.Arbitrary<Scenario> = fc
  .record({ phased: fc.boolean(), count: fc.integer({ min: 1, max: 7 }) })
  .chain(({ phased, count }) =>
    fc.record({
      phased: fc.constant(phased),
      count: fc.constant(count),
      latestAt: fc.oneof({ weight: 3, arbitrary: fc.constant(count) }, { weight: 2, arbitrary: fc.integer({ min: 0, max: count }) }),
      indexUpTo: fc.oneof({ weight: 3, arbitrary: fc.constant(count) }, { weight: 2, arbitrary: fc.integer({ min: -1, max: count }) }),
      gz: fc.array(fc.boolean(), { minLength: count, maxLength: count }),
      sources: fc.array(fc.integer({ min: 0, max: PHASED_TRIGGERS.length - 1 }), { minLength: count, maxLength: count }),
      batch: fc.option(
        fc
          .tuple(fc.integer({ min: 1, max: count }), fc.integer({ min: 0, max: 3 }))
          .map(([a, len]): [number, number] => [a, Math.min(count, a + len)]),
        { nil: undefined, freq: 3 },
      ),
      lock: fc.boolean(),
      latestDamage: damage,
      indexDamage: damage,
      fileDamage: fc.array(damage, { minLength: count, maxLength: count }),
    }),
  );

function applyDamage(bytes: Uint8Array, d: Damage, gzipped: boolean): Uint8Array | undefined {
  if (d.kind === 'none') return bytes;
  if (d.kind === 'delete') return undefined;
  if (d.kind === 'truncate') return bytes.slice(0, Math.floor(d.at * bytes.length));
  // Bit flips in a gzip header (flags, mtime, OS byte) are judged differently by different
  // inflaters; flips go into the deflate body and trailer, where the CRC-32 decides.
  const start = gzipped ? 10 : 0;
  const bit = start * 8 + Math.floor(d.at * (bytes.length - start) * 8);
  const out = bytes.slice();
  out[bit >> 3] = out[bit >> 3]! ^ (1 << (bit & 7));
  return out;
}

const same = (a: Uint8Array | undefined, b: Uint8Array): boolean =>
  a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);

interface Built {
  readonly storage: StorageAdapter;
  readonly profile: Profile<unknown>;
  readonly written: Written<unknown>[];
  /** Sequences whose stored copy (history entry, batch member or latest) the oracle deems valid. */
  readonly validSequences: Set<number>;
  /** Keys that were damaged or deleted (the only keys that may be reported as skipped). */
  readonly damaged: Set<string>;
  /** Every history/batch/latest key that exists after the damage. */
  readonly snapshotFiles: number;
  /** Sequences of history entries (not batch members) that exist, by sequence. */
  readonly historyPresent: Map<number, boolean>;
  readonly latestValid: boolean;
  /** Sequences whose history entry or batch member is valid (latest's copy not counted). */
  readonly fileValid: Set<number>;
}

async function build(s: Scenario): Promise<Built> {
  const profile = (s.phased ? phasedTestProfile : defaultProfile) as Profile<unknown>;
  const storage = memoryStorage();
  const written: Written<unknown>[] = [];
  for (let n = 1; n <= s.count; n++) {
    const createdAtMs = T0 + n * 1000;
    const id = s.phased
      ? `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`
      : `cp_${toRfc3339(createdAtMs).replace(/[-:.]/g, '')}_seq${String(n).padStart(4, '0')}`;
    const payload = s.phased ? phasedState(n) : defaultState(n);
    written.push(
      await encodeSnapshot(profile, RUN, n, payload, {
        id,
        createdAtMs,
        source: s.phased ? PHASED_TRIGGERS[s.sources[n - 1]!] : 'step_boundary',
      }),
    );
  }
  const validSequences = new Set<number>();
  const damaged = new Set<string>();
  const historyPresent = new Map<number, boolean>();
  let snapshotFiles = 0;
  const inBatch = (n: number): boolean => s.batch !== undefined && n >= s.batch[0] && n <= s.batch[1];
  const filePath = new Map<number, string>();

  for (const w of written) {
    const n = w.snapshot.sequence;
    if (inBatch(n)) continue;
    const gz = s.gz[n - 1]! && profile.compressHistory;
    const key = gz ? `${w.historyKey}.gz` : w.historyKey;
    const original = gz ? gzip(w.bytes) : w.bytes;
    const d = s.fileDamage[n - 1]!;
    const bytes = applyDamage(original, d, gz);
    filePath.set(n, w.historyKey);
    if (d.kind !== 'none') damaged.add(key).add(w.historyKey);
    if (bytes === undefined) continue;
    await storage.put(key, bytes);
    snapshotFiles++;
    historyPresent.set(n, true);
    let plain: Uint8Array | undefined;
    try {
      plain = gz ? new Uint8Array(gunzipSync(bytes)) : bytes;
    } catch {
      plain = undefined;
    }
    if (same(plain, w.bytes)) validSequences.add(n);
  }
  const fileValid = new Set(validSequences);

  if (s.batch) {
    const [a, b] = s.batch;
    const members = written.filter((w) => w.snapshot.sequence >= a && w.snapshot.sequence <= b);
    const key = profile.layout.batchKey!(RUN, a, b);
    const original = encodeBatchFile(members.map((m) => ({ sequence: m.snapshot.sequence, bytes: m.bytes })));
    const d = s.fileDamage[a - 1]!;
    const bytes = applyDamage(original, d, false);
    for (const m of members) filePath.set(m.snapshot.sequence, key);
    if (d.kind !== 'none') damaged.add(key);
    if (bytes !== undefined) {
      await storage.put(key, bytes);
      snapshotFiles++;
      // Oracle: the envelope keeps its exact shape and each member its exact JSON.
      let doc: unknown;
      try {
        doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
      } catch {
        doc = undefined;
      }
      const env = doc as { checkpoints?: unknown[]; batch_metadata?: Record<string, unknown> } | undefined;
      const meta = env?.batch_metadata;
      const shapeOk =
        env !== undefined &&
        env !== null &&
        typeof env === 'object' &&
        Object.keys(env).sort().join() === 'batch_metadata,checkpoints' &&
        Array.isArray(env.checkpoints) &&
        env.checkpoints.length > 0 &&
        meta !== undefined &&
        meta !== null &&
        typeof meta === 'object' &&
        Object.keys(meta).sort().join() === 'checkpoint_count,first_sequence,last_sequence' &&
        Object.values(meta).every((v) => Number.isInteger(v) && (v as number) >= 1);
      if (shapeOk) {
        env.checkpoints!.forEach((member, i) => {
          const m = members[i];
          if (!m) return;
          let json: string | undefined;
          try {
            json = canonicalJson(member);
          } catch {
            json = undefined;
          }
          if (json === new TextDecoder().decode(m.bytes)) {
            validSequences.add(m.snapshot.sequence);
            fileValid.add(m.snapshot.sequence);
          } else damaged.add(`${key}#${i}`);
        });
        // Members beyond the original list (a flipped array?) cannot appear from one bit flip.
      }
      for (let i = 0; i < members.length; i++) damaged.add(`${key}#${i}`);
    }
  }

  let latestValid = false;
  if (s.latestAt > 0) {
    const w = written[s.latestAt - 1]!;
    const key = profile.layout.latestKey(RUN);
    const bytes = applyDamage(w.bytes, s.latestDamage, false);
    if (s.latestDamage.kind !== 'none') damaged.add(key);
    if (bytes !== undefined) {
      await storage.put(key, bytes);
      snapshotFiles++;
      if (same(bytes, w.bytes)) {
        validSequences.add(s.latestAt);
        latestValid = true;
      }
    }
  }

  if (s.indexUpTo >= 0) {
    await putIndex(
      storage,
      profile,
      RUN,
      written.slice(0, s.indexUpTo).map((w) => indexEntry(w, filePath.get(w.snapshot.sequence))),
    );
    const key = profile.layout.indexKey!(RUN);
    if (s.indexDamage.kind !== 'none') {
      damaged.add(key);
      const stored = (await storage.get(key))!.bytes;
      const bytes = applyDamage(stored, s.indexDamage, false);
      if (bytes === undefined) await storage.delete(key);
      else await storage.put(key, bytes);
    }
  }
  if (s.lock) await storage.put(profile.layout.lockKey(RUN), new TextEncoder().encode('{"owner":"crashed"}'));
  return { storage, profile, written, validSequences, damaged, snapshotFiles, historyPresent, latestValid, fileValid };
}

async function outcome(
  b: Built,
  newerCheck: 'scan' | 'auto',
): Promise<{ sequence: number; skipped: string[]; missing: string[]; payload: unknown; next: number } | { error: string }> {
  try {
    const plan = await planResume({
      storage: b.storage,
      profile: b.profile,
      runId: RUN,
      newerCheck,
      clock: { now: () => T0, setTimeout: () => 0, clearTimeout: () => undefined },
    });
    return {
      sequence: plan.snapshot.sequence,
      skipped: plan.skipped.map((x) => x.key),
      missing: (
        await Promise.all(
          plan.skipped.map(async (x) => (x.reasonCode === 'checkpoint_not_found' && !(await b.storage.get(x.key)) ? x.key : '')),
        )
      ).filter(Boolean),
      payload: plan.payload,
      next: plan.nextSequence,
    };
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    return { error: err.reasonCode };
  }
}

function checkCommon(b: Built, got: Awaited<ReturnType<typeof outcome>>, expected: number): void {
  if (expected === 0) {
    expect(got).toHaveProperty('error');
    const code = (got as { error: string }).error;
    if (b.snapshotFiles > 0) expect(code).toBe('checkpoint_no_valid_snapshot');
    else expect(['checkpoint_no_valid_snapshot', 'checkpoint_not_found']).toContain(code);
    return;
  }
  expect(got).not.toHaveProperty('error');
  const ok = got as Exclude<typeof got, { error: string }>;
  expect(ok.sequence).toBe(expected);
  expect(ok.payload).toEqual(b.written[expected - 1]!.snapshot.payload);
  expect(ok.next).toBeGreaterThan(expected);
  // Never reports a sound file as skipped. A damaged index that still decodes may name a file
  // that does not exist (a flipped character in a file_path): reported missing, which is true.
  const indexDamaged = b.damaged.has(b.profile.layout.indexKey!(RUN));
  for (const key of ok.skipped) {
    const phantom = indexDamaged && ok.missing.includes(key);
    expect(
      b.damaged.has(key) || b.damaged.has(key.replace(/\.gz$/, '')) || phantom,
      `${key} skipped; damaged: ${[...b.damaged].join(' ')}`,
    ).toBe(true);
  }
}

describe('planResume under random damage (fast-check)', () => {
  // Found by the scan property (seed -1657568757): a flipped index still decodes and names a file
  // that does not exist ("bp_…" for "cp_…"); the plan reports it missing, the newest valid (#4) wins.
  it('a flipped index naming a file that does not exist: reported missing, resume from the newest valid', async () => {
    const s = {
      phased: false,
      count: 5,
      latestAt: 0,
      indexUpTo: 5,
      gz: [false, false, false, false, false],
      sources: [0, 0, 0, 0, 0],
      batch: undefined,
      lock: false,
      latestDamage: { kind: 'none' },
      indexDamage: { kind: 'flip', at: 0.2868525896414343 },
      fileDamage: [{ kind: 'delete' }, { kind: 'flip', at: 0 }, { kind: 'flip', at: 0 }, { kind: 'none' }, { kind: 'flip', at: 0 }],
    } as unknown as Parameters<typeof build>[0];
    const b = await build(s);
    const got = await outcome(b, 'scan');
    checkCommon(b, got, 4);
    expect('error' in got ? [] : got.missing.filter((k) => !b.damaged.has(k))).toHaveLength(1);
  });

  it('newerCheck scan: exactly the newest valid snapshot, or checkpoint_no_valid_snapshot', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const b = await build(s);
        const expected = Math.max(0, ...b.validSequences);
        checkCommon(b, await outcome(b, 'scan'), expected);
      }),
      {
        numRuns: Number(process.env.RESUME_PROPERTY_RUNS ?? 250),
        ...(process.env.RESUME_PROPERTY_SEED ? { seed: Number(process.env.RESUME_PROPERTY_SEED) } : {}),
      },
    );
  });

  it('newerCheck auto (the O(1) path): exactly what latest → index top → newer check can see, else the scan’s exact answer', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const b = await build(s);
        const exact = Math.max(0, ...b.validSequences);
        // The snapshot the cheap path anchors on: a valid latest, else the index's highest
        // entry when its file holds it (a batch file contributes all its valid members).
        let anchor: number | undefined;
        if (b.latestValid) anchor = s.latestAt;
        else if (s.indexUpTo >= 1 && (s.indexDamage.kind === 'none' || s.indexDamage.kind === 'flip') && b.fileValid.has(s.indexUpTo)) {
          const batch = s.batch && s.indexUpTo >= s.batch[0] && s.indexUpTo <= s.batch[1] ? s.batch : undefined;
          anchor = batch ? Math.max(...[...b.fileValid].filter((n) => n >= batch[0] && n <= batch[1])) : s.indexUpTo;
        }
        let expected = exact;
        if (anchor !== undefined) {
          if (s.phased) {
            // Probe: sequences anchor+1, +2 … while a history entry (valid or not) exists; batch files are not probed.
            expected = anchor;
            for (let n = anchor + 1; b.historyPresent.get(n); n++) if (b.fileValid.has(n)) expected = Math.max(expected, n);
          } else if (!s.lock) {
            expected = anchor; // id-named history, no lock left behind: the anchor is trusted
          }
        }
        const got = await outcome(b, 'auto');
        // A flipped index may still decode; then the planner either used it (as if intact) or,
        // having caught the damage, scanned (exact). Both are sound.
        const allowed = !b.latestValid && s.indexDamage.kind === 'flip' && s.indexUpTo >= 1 ? [expected, exact] : [expected];
        const seq = 'error' in got ? 0 : got.sequence;
        expect(allowed).toContain(seq);
        checkCommon(b, got, seq);
      }),
      {
        numRuns: Number(process.env.RESUME_PROPERTY_RUNS ?? 250),
        ...(process.env.RESUME_PROPERTY_SEED ? { seed: Number(process.env.RESUME_PROPERTY_SEED) } : {}),
      },
    );
  });
});
