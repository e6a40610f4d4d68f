/**
 * fsStorage's write-ahead journal: record format, replay on open, group
 * commit, and a fault or crash injected at every file-system call of a batch and of
 * recovery — after each, the spec's files hold the whole old state or the whole new one
 * (never a mix, never a torn file), and an acknowledged batch is never lost.
 */
import { constants, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { systemClock, type BatchOperation, type Clock } from 'savepoint';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { fsStorage } from 'savepoint/fs';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import {
  decodeJournal,
  encodeRecord,
  JOURNAL_NAMES,
  nextEpoch,
  replayOrder,
  type DecodedRecord,
} from '../../../src/storage/fs/journal/index.js';
import { scratchFolder } from '../../support/scratch.js';

const scratch = scratchFolder('fs-journal');
let counter = 0;
const fresh = (): string => {
  const dir = join(scratch, `j${counter++}`);
  mkdirSync(dir);
  return dir;
};
const b = (s: string): Uint8Array => utf8Encode(s);
const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');
/** The records of the store's two journal files, in replay order (a file never made counts as empty). */
function journalLog(dir: string): DecodedRecord[] {
  const found = JOURNAL_NAMES.map((name) => {
    try {
      return decodeJournal(readFileSync(join(dir, name)));
    } catch {
      return decodeJournal(new Uint8Array(0));
    }
  });
  const epochs = found.map((f) => (f.records.length > 0 ? f.epoch : undefined)) as [number | undefined, number | undefined];
  return replayOrder(epochs).flatMap((file) => found[file]!.records);
}
/** Whole records in the store's journal (the files themselves stay, preallocated). */
const journalRecords = (dir: string): number => journalLog(dir).length;
/** A clock two minutes ahead: locks and temp files an abandoned ("crashed") instance of this process left are stale to it. */
const later: Clock = { ...systemClock, now: () => Date.now() + 120_000 };

/**
 * Wraps the real calls: counts them, and from step `failAt` on (or the first call for which
 * `failAt` returns true, given the calls so far) fails one (`fault`) or every later one (`crash`).
 */
function faultyIo(): {
  io: FsIo;
  calls: string[];
  arm(failAt: number | ((calls: readonly string[]) => boolean), mode: 'fault' | 'crash'): void;
  disarm(): void;
} {
  const calls: string[] = [];
  let failAt: number | ((calls: readonly string[]) => boolean) = Infinity;
  let failedAt = Infinity;
  let mode: 'fault' | 'crash' = 'fault';
  let armed = false;
  const io = Object.fromEntries(
    Object.entries(realIo).map(([name, fn]) => [
      name,
      (...args: unknown[]): Promise<unknown> => {
        if (armed) {
          calls.push(name);
          const step = calls.length;
          if (failedAt === Infinity && (typeof failAt === 'number' ? step === failAt : failAt(calls))) failedAt = step;
          if (step === failedAt || (mode === 'crash' && step > failedAt)) {
            return Promise.reject(Object.assign(new Error(`EIO: injected at step ${step} (${name})`), { code: 'EIO', syscall: name }));
          }
        }
        return (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    ]),
  ) as unknown as FsIo;
  return {
    io,
    calls,
    arm(at, m) {
      calls.length = 0;
      failAt = at;
      failedAt = Infinity;
      mode = m;
      armed = true;
    },
    disarm() {
      armed = false;
    },
  };
}

const OLD = { latest: 'latest v1', index: 'index v1' };
const NEW = { latest: 'latest v2 — a longer document than before', index: 'index v2 — a longer index', history: 'history 2' };

/**
 * Opens a journaled store and makes one unrelated write first: the pool of temp files made
 * ahead is filled and the timestamp probe done, so a fault injected afterwards lands in the
 * batch under test (and its own refill), not in the store's first-use work.
 */
async function warmed(dir: string, io: FsIo, extra: { journalCheckpointBytes?: number } = {}): Promise<ReturnType<typeof createFsStorage>> {
  const s = createFsStorage({ dir, journal: true, ...extra }, { io });
  await s.put('warm.json', b('warm'));
  await s.flush!();
  return s;
}

/** Seeds a run (old state) and returns the lease version the batch is fenced with. */
async function seed(dir: string): Promise<string> {
  const s = fsStorage({ dir, journal: true });
  const lease = await s.put('leases/run-1', b('holder'));
  await s.put('checkpoints/run-1/latest.json', b(OLD.latest));
  await s.put('checkpoints/run-1/index.json', b(OLD.index));
  await s.close();
  return lease.version;
}

const checkpointBatch = (lease: string): BatchOperation[] => [
  { type: 'check', key: 'leases/run-1', ifVersion: lease },
  { type: 'put', key: 'checkpoints/run-1/history/cp_002.json', bytes: b(NEW.history), ifAbsent: true },
  { type: 'put', key: 'checkpoints/run-1/latest.json', bytes: b(NEW.latest) },
  { type: 'put', key: 'checkpoints/run-1/index.json', bytes: b(NEW.index) },
];

/** What a reader that is not savepoint sees: 'old', 'new', or a description of anything else. */
function onDisk(dir: string): 'old' | 'new' | string {
  const read = (rel: string): string | undefined => {
    try {
      return readFileSync(join(dir, rel), 'utf8');
    } catch {
      return undefined;
    }
  };
  const state = {
    latest: read('checkpoints/run-1/latest.json'),
    index: read('checkpoints/run-1/index.json'),
    history: read('checkpoints/run-1/history/cp_002.json'),
  };
  if (state.latest === OLD.latest && state.index === OLD.index && state.history === undefined) return 'old';
  if (state.latest === NEW.latest && state.index === NEW.index && state.history === NEW.history) return 'new';
  return JSON.stringify(state);
}

/** Each spec file holds the whole old or the whole new bytes (or, for the new history file, is absent). */
function wholeFiles(dir: string, where: string): void {
  for (const [rel, allowed] of [
    ['checkpoints/run-1/latest.json', [OLD.latest, NEW.latest]],
    ['checkpoints/run-1/index.json', [OLD.index, NEW.index]],
    ['checkpoints/run-1/history/cp_002.json', [undefined, NEW.history]],
  ] as const) {
    let got: string | undefined;
    try {
      got = readFileSync(join(dir, rel), 'utf8');
    } catch {
      got = undefined;
    }
    expect(allowed, `${where}: ${rel}`).toContain(got);
  }
}

describe('journal record format', () => {
  it('round-trips records and stops at a torn or corrupted one', () => {
    const r1 = encodeRecord(
      [
        ['p', 'a/b', 3],
        ['d', 'c'],
      ],
      [b('xyz')],
    );
    const r2 = encodeRecord([['p', 'k', 0]], [new Uint8Array(0)]);
    const both = Buffer.concat([r1, r2]);
    const { records, end } = decodeJournal(both);
    expect(end).toBe(both.length);
    expect(records.map((r) => r.ops.map((o) => [o.type, o.key, o.type === 'put' ? Buffer.from(o.bytes).toString() : null]))).toEqual([
      [
        ['put', 'a/b', 'xyz'],
        ['delete', 'c', null],
      ],
      [['put', 'k', '']],
    ]);
    for (let cut = r1.length; cut < both.length; cut++)
      expect(decodeJournal(both.subarray(0, cut))).toMatchObject({ end: r1.length, records: [{}] });
    const flipped = Buffer.from(both);
    flipped[r1.length + 20]! ^= 1;
    expect(decodeJournal(flipped).end).toBe(r1.length);
  });
});

describe('journal mode', () => {
  it('commits a fenced batch atomically, leaves an empty journal on close, and refuses a stale fence', async () => {
    const dir = fresh();
    const lease = await seed(dir);
    const s = fsStorage({ dir, journal: true });
    expect(s.capabilities.atomicBatch).toBe(true);
    const outcomes = await s.batch!(checkpointBatch(lease));
    expect(outcomes.map((o) => o.type)).toEqual(['check', 'put', 'put', 'put']);
    // Acknowledged: reads see it at once, with the version the batch answered; flush() brings the files up to date.
    expect(await s.get('checkpoints/run-1/latest.json')).toEqual({
      bytes: b(NEW.latest),
      version: (outcomes[2] as { version: string }).version,
    });
    await s.flush!();
    expect(onDisk(dir)).toBe('new');
    expect((await s.get('checkpoints/run-1/latest.json'))?.version).toBe((outcomes[2] as { version: string }).version);
    await s.put('leases/run-1', b('holder 2')); // another writer took the run over
    await expect(
      s.batch!([
        { type: 'check', key: 'leases/run-1', ifVersion: lease },
        { type: 'put', key: 'checkpoints/run-1/latest.json', bytes: b('stale') },
      ]),
    ).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
    });
    expect(onDisk(dir)).toBe('new');
    await s.close();
    expect(journalRecords(dir)).toBe(0);
  });

  it('concurrent batches of one adapter share journal appends and fsyncs (group commit)', async () => {
    const dir = fresh();
    const faults = faultyIo();
    const s = createFsStorage({ dir, journal: true }, { io: faults.io });
    await s.ready();
    faults.arm(Infinity, 'fault');
    const runs = 16;
    await Promise.all(
      Array.from({ length: runs }, (_, r) =>
        s.batch!([
          { type: 'put', key: `checkpoints/run-${r}/history/cp_001.json`, bytes: b(`h${r}`), ifAbsent: true },
          { type: 'put', key: `checkpoints/run-${r}/latest.json`, bytes: b(`l${r}`) },
        ]),
      ),
    );
    const appends = faults.calls.filter((c) => c === 'writeAt').length;
    expect(appends).toBeGreaterThanOrEqual(1);
    expect(appends).toBeLessThan(runs); // at least two runs' batches shared a record
    await s.flush!();
    for (let r = 0; r < runs; r++) expect(readFileSync(join(dir, `checkpoints/run-${r}/latest.json`), 'utf8')).toBe(`l${r}`);
    await s.close();
  });

  it('replays on open: files a power loss tore or lost are rebuilt from the journal; whole ones keep their version', async () => {
    const dir = fresh();
    const lease = await seed(dir);
    const faults = faultyIo();
    const s = createFsStorage({ dir, journal: true }, { io: faults.io });
    await s.ready();
    const done = await s.batch!(checkpointBatch(lease));
    await s.flush!();
    // Simulate a power loss after the commit: the journal record is durable, the applied files are not.
    expect(journalRecords(dir)).toBe(1);
    writeFileSync(join(dir, 'checkpoints/run-1/latest.json'), 'latest v'); // torn
    rmSync(join(dir, 'checkpoints/run-1/history/cp_002.json')); // lost
    const reopened = fsStorage({ dir, journal: true, clock: later });
    const report = await reopened.ready();
    expect(report.journal).toMatchObject({ records: 1, repaired: 2, discardedBytes: 0 });
    expect(onDisk(dir)).toBe('new');
    // index.json was whole: untouched, so a writer holding its version is not disturbed.
    expect((await reopened.get('checkpoints/run-1/index.json'))?.version).toBe((done[3] as { version: string }).version);
    expect(journalRecords(dir)).toBe(0);
    await reopened.close();
    faults.disarm();
  });

  it('a non-journaled instance opening a store with a journal replays it first', async () => {
    const dir = fresh();
    const lease = await seed(dir);
    const s = fsStorage({ dir, journal: true });
    await s.batch!(checkpointBatch(lease));
    await s.flush!();
    rmSync(join(dir, 'checkpoints/run-1/index.json'));
    const direct = fsStorage({ dir, clock: later });
    expect((await direct.ready()).journal).toMatchObject({ records: 1, repaired: 1 });
    expect(onDisk(dir)).toBe('new');
    await direct.close();
  });
});

describe('recovery and containment', () => {
  it('a journaled key whose directory became a symlink is left alone; the other keys are repaired', async () => {
    const dir = fresh();
    const lease = await seed(dir);
    const s = fsStorage({ dir, journal: true });
    await s.batch!([...checkpointBatch(lease), { type: 'put', key: 'other/k.json', bytes: b('other') }]);
    await s.flush!();
    // Power loss: other/k.json lost; meanwhile the run directory was swapped for a link to outside.
    rmSync(join(dir, 'other/k.json'));
    const outside = join(dir, '..', `outside-${counter++}`);
    mkdirSync(outside);
    writeFileSync(join(outside, 'latest.json'), 'outside');
    rmSync(join(dir, 'checkpoints/run-1'), { recursive: true });
    symlinkSync(outside, join(dir, 'checkpoints/run-1'));
    const reopened = fsStorage({ dir, journal: true, clock: later });
    expect((await reopened.ready()).journal).toMatchObject({ repaired: 1, refused: 3 });
    expect(readFileSync(join(dir, 'other/k.json'), 'utf8')).toBe('other');
    expect(readdirSync(outside)).toEqual(['latest.json']);
    expect(readFileSync(join(outside, 'latest.json'), 'utf8')).toBe('outside');
    await reopened.close();
  });
});

describe('a fault or crash at every file-system call', () => {
  // rotating: the batch is followed by a checkpoint of the journal (applied files fsynced, journal emptied).
  it.each([
    ['', {}],
    [' and of the journal checkpoint after it', { journalCheckpointBytes: 1 }],
  ] as const)(
    'of a batch%s: the files hold the whole old or the whole new state; an acknowledged batch is never lost',
    async (_, extra) => {
      // Count the calls of one batch.
      const probeDir = fresh();
      const probeLease = await seed(probeDir);
      const probe = faultyIo();
      const p = await warmed(probeDir, probe.io, extra);
      probe.arm(Infinity, 'fault');
      await p.batch!(checkpointBatch(probeLease));
      await p.flush!(); // the files are applied after the answer: their calls count too
      const steps = probe.calls.length;
      probe.disarm();
      await p.close();
      expect(steps).toBeGreaterThan(10);

      const seen = { fault: { acked: 0, refused: 0 }, crash: { acked: 0, refused: 0 } };
      for (const mode of ['fault', 'crash'] as const) {
        for (let step = 1; step <= steps + 1; step++) {
          const dir = fresh();
          const lease = await seed(dir);
          const faults = faultyIo();
          const s = await warmed(dir, faults.io, extra);
          faults.arm(step, mode);
          const acked = await s.batch!(checkpointBatch(lease)).then(
            () => true,
            () => false,
          );
          seen[mode][acked ? 'acked' : 'refused']++;
          // The files are applied after the answer: flush() waits for them (a live process replays what a fault interrupted).
          const flushed = await s.flush!().then(
            () => true,
            () => false,
          );
          const where = `${mode} at step ${step} (${faults.calls[step - 1] ?? 'after the last call'})`;
          // Right away (a live process after a fault; a dead one after a crash) and after the next open:
          const now = onDisk(dir);
          // A live process (fault) has replayed a half-applied batch before flush() resolved; a dead one
          // (crash) may have stopped between renames: each file is still whole, old or new.
          if (mode === 'fault' && flushed) expect(['old', 'new'], `${where}: files right after`).toContain(now);
          else wholeFiles(dir, where);
          if (acked && flushed) expect(now, `${where}: acknowledged and flushed but not on disk`).toBe('new');
          if (mode === 'fault') {
            // The same instance keeps working: the next batch lands (replaying first if it must).
            faults.disarm();
            const lease2 = (await s.get('leases/run-1'))!.version;
            await s.batch!([
              { type: 'check', key: 'leases/run-1', ifVersion: lease2 },
              { type: 'put', key: 'checkpoints/run-1/next.json', bytes: b('next') },
            ]);
            await s.close();
          }
          const reopened = fsStorage({ dir, journal: true, clock: later });
          await reopened.ready();
          const after = onDisk(dir);
          expect(['old', 'new'], `${where}: files after reopening`).toContain(after);
          if (acked) expect(after, `${where}: acknowledged batch lost on reopening`).toBe('new');
          if (now === 'new') expect(after, `${where}: a new state went back`).toBe('new');
          // No internal debris survives a reopen, and the journal is empty.
          const debris = readdirSync(join(dir, 'checkpoints/run-1'), { recursive: true })
            .map(String)
            .filter((n) => n.includes('.sp\\'));
          expect(debris, where).toEqual([]);
          expect(journalRecords(dir), where).toBe(0);
          await reopened.close();
        }
      }
      // Both outcomes happened: faults before the commit point refuse, after it the batch stands.
      expect(seen.fault.refused).toBeGreaterThan(0);
      expect(seen.crash.refused).toBeGreaterThan(0);
      expect(seen.fault.acked + seen.crash.acked).toBeGreaterThan(0);
    },
  );

  it('of recovery: a crash while replaying leaves old-or-new files, and the next open completes it', async () => {
    // Where the commit point falls in a batch: count on a twin store (same batch shape).
    const twinDir = fresh();
    const twinLease = await seed(twinDir);
    const twinFaults = faultyIo();
    const twin = createFsStorage({ dir: twinDir, journal: true }, { io: twinFaults.io });
    await twin.ready();
    twinFaults.arm(Infinity, 'fault');
    await twin.batch!(checkpointBatch(twinLease));
    await twin.flush!();
    expect(twinFaults.calls.indexOf('rename', twinFaults.calls.indexOf('writeAt'))).toBeGreaterThan(0);
    await twin.close();

    // The committed-not-applied state: acknowledged, then a crash at the first rename after the journal's write (O_DSYNC: durable when it returns).
    const make = async (): Promise<string> => {
      const dir = fresh();
      const lease = await seed(dir);
      const probe = faultyIo();
      const s = createFsStorage({ dir, journal: true }, { io: probe.io });
      await s.ready();
      probe.arm((calls) => calls.at(-1) === 'rename' && calls.includes('writeAt'), 'crash');
      await s.batch!(checkpointBatch(lease));
      await expect(s.flush!()).rejects.toBeDefined();
      expect(onDisk(dir)).toBe('old');
      expect(journalRecords(dir)).toBeGreaterThan(0);
      return dir;
    };

    // Count the calls of a recovery.
    const countDir = await make();
    const counting = faultyIo();
    counting.arm(Infinity, 'fault');
    const c = createFsStorage({ dir: countDir, journal: true, clock: later }, { io: counting.io });
    await c.ready();
    const steps = counting.calls.length;
    await c.close();
    expect(onDisk(countDir)).toBe('new');
    expect(steps).toBeGreaterThan(5);

    for (let step = 1; step <= steps; step++) {
      const dir = await make();
      const faults = faultyIo();
      faults.arm(step, 'crash');
      const r = createFsStorage({ dir, journal: true, clock: later }, { io: faults.io });
      await r.ready().catch(() => undefined);
      const where = `crash at recovery step ${step} (${faults.calls[step - 1]})`;
      // Mid-replay some keys may already be new; but every file is whole (old or new bytes), never torn.
      wholeFiles(dir, where);
      const next = fsStorage({ dir, journal: true, clock: { ...later, now: () => Date.now() + 240_000 } });
      await next.ready();
      expect(onDisk(dir), `${where}: after the next open`).toBe('new');
      await next.close();
    }
  });
});

describe('one write and one fdatasync per commit', () => {
  it('a commit is one positional write of the journal, opened O_DSYNC (durable when it returns), answered before any file is renamed; no fsync', async () => {
    const dir = fresh();
    const lease = await seed(dir);
    const faults = faultyIo();
    const journalFlags: number[] = [];
    const io: FsIo = {
      ...faults.io,
      open: (path, flags, mode) => {
        if (JOURNAL_NAMES.some((name) => path.endsWith(name))) journalFlags.push(flags);
        return faults.io.open(path, flags, mode);
      },
    };
    const s = createFsStorage({ dir, journal: true }, { io });
    await s.ready();
    expect(journalFlags.length).toBeGreaterThan(0);
    for (const flags of journalFlags) expect(flags & constants.O_DSYNC, 'the journal is opened O_DSYNC').toBe(constants.O_DSYNC);
    faults.arm(Infinity, 'fault');
    await s.batch!(checkpointBatch(lease));
    const atAnswer = [...faults.calls];
    await s.flush!();
    const count = (calls: readonly string[], name: string): number => calls.filter((c) => c === name).length;
    expect([count(atAnswer, 'writeAt'), count(atAnswer, 'rename')]).toEqual([1, 0]);
    expect([count(faults.calls, 'writeAt'), count(faults.calls, 'datasync'), count(faults.calls, 'fsync')]).toEqual([1, 0, 0]);
    expect(onDisk(dir)).toBe('new');
    faults.disarm();
    await s.close();
  });

  it('a record of another epoch ends the journal: older records behind a new first record are never read', () => {
    const old1 = encodeRecord([['p', 'k/a', 3]], [b('one')], 7);
    const old2 = encodeRecord([['p', 'k/b', 3]], [b('two')], 7);
    // After a checkpoint the next record starts at offset 0 under a new epoch; here it is
    // exactly as long as the old first record, so an old record starts right where it ends.
    const next = encodeRecord([['p', 'k/a', 3]], [b('new')], 9);
    expect(next.length).toBe(old1.length);
    const journal = Buffer.concat([next, old2]);
    const decoded = decodeJournal(journal);
    expect(decoded).toMatchObject({ end: next.length, epoch: 9, torn: 0 });
    expect(decoded.records.map((r) => r.ops.map((o) => o.key))).toEqual([['k/a']]);
    // The old journal itself decodes whole, and a header voided by a checkpoint empties it.
    expect(decodeJournal(Buffer.concat([old1, old2])).records).toHaveLength(2);
    expect(decodeJournal(Buffer.concat([Buffer.alloc(20), old2])).records).toHaveLength(0);
  });

  it('a put whose temp file came from an earlier put, then merged away by a delete, costs no replay (regression: the journal was replayed and checkpointed)', async () => {
    // put, put (takes the first one's temp file over), delete, put — one apply merges them: the
    // second put's temp file went back as if it had never been committed, which asked for a replay.
    for (let round = 0; round < 5; round++) {
      const dir = fresh();
      const s = createFsStorage({ dir, journal: true, journalCheckpointBytes: 1 << 20 }, { journalLingerMs: 2 });
      await s.ready();
      const key = 'runs/a/latest.json';
      await s.put(key, b('value 0'));
      await s.put(key, b('value 1'));
      await s.delete(key);
      await s.put(key, b('value 3'));
      await s.flush!();
      // No replay: the journal still holds the four records (a replay checkpoints and empties it).
      expect(journalLog(dir).map((r) => r.ops.map((o) => o.type))).toEqual([['put'], ['put'], ['delete'], ['put']]);
      expect(readFileSync(join(dir, key), 'utf8')).toBe('value 3');
      // The temp file went back to the pool: none is left behind in the run's directory once closed.
      await s.close();
      expect(readdirSync(join(dir, 'runs/a'))).toEqual(['latest.json']);
    }
  });

  it('two instances taking turns (as two processes do) append after each other, across checkpoints (property)', async () => {
    const value = (i: number): string => `value ${i} ${'x'.repeat((i % 7) * 9)}`;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            by: fc.integer({ min: 0, max: 1 }),
            key: fc.constantFrom('runs/a/latest.json', 'runs/a/history/cp_1.json', 'runs/b/latest.json', 'top.json'),
            del: fc.boolean(),
            pause: fc.boolean(),
          }),
          { minLength: 1, maxLength: 14 },
        ),
        fc.constantFrom(150, 600, 1 << 20),
        async (steps, checkpointBytes) => {
          const dir = fresh();
          // A 2 ms linger: a pause of 8 ms lets the holder's lock go, so the instances do take turns.
          const a = createFsStorage({ dir, journal: true, journalCheckpointBytes: checkpointBytes }, { journalLingerMs: 2 });
          const c = createFsStorage({ dir, journal: true, journalCheckpointBytes: checkpointBytes }, { journalLingerMs: 2 });
          // Opening replays and checkpoints: both open before the sequence, as running processes are.
          await Promise.all([a.ready(), c.ready()]);
          const model = new Map<string, string>();
          const written: [string, string | null][] = [];
          for (const [i, step] of steps.entries()) {
            const s = step.by === 0 ? a : c;
            if (step.del) {
              await s.delete(step.key);
              model.delete(step.key);
              written.push([step.key, null]);
            } else {
              await s.put(step.key, b(value(i)));
              model.set(step.key, value(i));
              written.push([step.key, value(i)]);
            }
            // The other instance (another process, as far as the journal is concerned) reads the acknowledged state at once:
            // through the journal's records while the writer holds the lock, from the files once it let it go.
            const other = step.by === 0 ? c : a;
            const seen = await other.get(step.key);
            expect(seen && utf8(seen.bytes), `step ${i}: ${step.key} read by the other instance`).toBe(model.get(step.key));
            // Long enough for the holder to let the journal lock go: the other one takes it next.
            if (step.pause) await new Promise((r) => setTimeout(r, 8));
          }
          // Both idle: every write applied, and a checkpoint a last write started is over.
          await Promise.all([a.flush!(), c.flush!()]);
          const logged = journalLog(dir).flatMap((r) =>
            r.ops.map((o): [string, string | null] => [o.key, o.type === 'put' ? Buffer.from(o.bytes).toString() : null]),
          );
          // The journal holds the writes since its last checkpoint, in commit order: a suffix of all of them.
          expect(logged).toEqual(written.slice(written.length - logged.length));
          if (checkpointBytes === 1 << 20) expect(logged).toEqual(written);
          // Power loss: every file the journal names lost its applied bytes. Replay restores the model.
          for (const [key] of logged) rmSync(join(dir, key), { force: true });
          const r = fsStorage({ dir, journal: true, clock: later });
          await r.ready();
          for (const [key] of logged)
            expect((await r.get(key)) && utf8(((await r.get(key)) as { bytes: Uint8Array }).bytes), key).toBe(model.get(key));
          await Promise.all([a.close(), c.close(), r.close()]);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('two journal files: a checkpoint does not hold commits up', () => {
  it('commits go on in the other file while the full one is checkpointed; its fsyncs run in the background', async () => {
    const dir = fresh();
    // Every fsync waits at a gate once armed: the journal checkpoint's fsyncs hang until it opens.
    let gated = false;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let reached!: () => void;
    const fsyncReached = new Promise<void>((r) => (reached = r));
    const io: FsIo = {
      ...realIo,
      fsync: async (fd) => {
        if (gated) {
          reached();
          await gate;
        }
        return realIo.fsync(fd);
      },
    };
    // A 1-byte threshold: every commit fills its file, so each one switches files.
    const s = createFsStorage({ dir, journal: true, journalCheckpointBytes: 1 }, { io });
    await s.ready();
    gated = true;
    await s.put('runs/a/latest.json', b('a1')); // fills file 1: commits switch to file 2, file 1 is checkpointed
    await fsyncReached;
    // The checkpoint hangs in an fsync; the next commit is answered all the same (it used to wait for every fsync).
    const next = s.put('runs/b/latest.json', b('b1')).then(() => 'acknowledged' as const);
    const stuck = new Promise<'held up'>((r) => setTimeout(() => r('held up'), 1000));
    expect(await Promise.race([next, stuck])).toBe('acknowledged');
    expect(journalRecords(dir)).toBe(2); // one record in each file, none emptied yet
    gate.then(
      () => undefined,
      () => undefined,
    );
    open();
    await s.flush!();
    expect(readFileSync(join(dir, 'runs/a/latest.json'), 'utf8')).toBe('a1');
    expect(readFileSync(join(dir, 'runs/b/latest.json'), 'utf8')).toBe('b1');
    await s.close();
    expect(journalRecords(dir)).toBe(0);
  });

  it('a holder that finds records in both files (another process let the lock go so) replays them, older file first, before committing', async () => {
    const dir = fresh();
    const s = fsStorage({ dir, journal: true, journalCheckpointBytes: 4096 });
    await s.ready();
    // What another process left: a record in each file, the second file's epoch the next of the first's; the files not applied.
    const epoch = 0xfffffffe;
    writeFileSync(
      join(dir, JOURNAL_NAMES[1]),
      encodeRecord(
        [
          ['p', 'k/shared', 5],
          ['p', 'k/only-old', 3],
        ],
        [b('older'), b('old')],
        epoch,
      ),
    );
    writeFileSync(join(dir, JOURNAL_NAMES[0]), encodeRecord([['p', 'k/shared', 5]], [b('newer')], nextEpoch(epoch)));
    // The commit that finds them may be refused (the replay comes first); the next one lands after the replay.
    await s.put('k/mine', b('mine')).catch(() => s.put('k/mine', b('mine')));
    await s.flush!();
    expect(['k/shared', 'k/only-old', 'k/mine'].map((k) => readFileSync(join(dir, k), 'utf8'))).toEqual(['newer', 'old', 'mine']);
    await s.close();
    expect(journalRecords(dir)).toBe(0);
  });

  it('replay order follows the epochs: the file whose epoch is the next of the other one is newer (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0xffffffff }), fc.boolean(), (epoch, swap) => {
        const next = nextEpoch(epoch);
        expect(next).not.toBe(0);
        expect(next).not.toBe(epoch);
        expect(replayOrder(swap ? [next, epoch] : [epoch, next])).toEqual(swap ? [1, 0] : [0, 1]);
        // One file with records: it comes first; none: any order.
        expect(replayOrder(swap ? [undefined, epoch] : [epoch, undefined])[0]).toBe(swap ? 1 : 0);
      }),
      { numRuns: 200 },
    );
    expect(nextEpoch(0xffffffff)).toBe(1);
  });

  it('after a crash between a switch and the end of the checkpoint, both files replay in order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ key: fc.constantFrom('r/a/latest.json', 'r/a/index.json', 'r/b/latest.json'), del: fc.boolean() }), {
          minLength: 2,
          maxLength: 10,
        }),
        fc.integer({ min: 1, max: 9 }),
        async (steps, stopAt) => {
          const dir = fresh();
          // fsyncs fail from step `stopAt` on: a background checkpoint does not empty its file. At the end the
          // instance dies: every later call fails (a power loss stops a checkpoint under way, too).
          let failing = false;
          let dead = false;
          const io = Object.fromEntries(
            Object.entries(realIo).map(([name, fn]) => [
              name,
              (...args: unknown[]): Promise<unknown> => {
                if (dead || (failing && name === 'fsync'))
                  return Promise.reject(Object.assign(new Error('EIO: injected'), { code: 'EIO' }));
                return (fn as (...a: unknown[]) => Promise<unknown>)(...args);
              },
            ]),
          ) as unknown as FsIo;
          const s = createFsStorage({ dir, journal: true, journalCheckpointBytes: 120 }, { io });
          await s.ready();
          const model = new Map<string, string>();
          // A write refused once fsyncs fail (the replay before its commit failed) was not committed; the loop stops there.
          for (const [i, step] of steps.entries()) {
            if (i === stopAt) failing = true;
            const done = await (step.del ? s.delete(step.key) : s.put(step.key, b(`v${i}`))).then(
              () => true,
              () => false,
            );
            if (!done) break;
            if (step.del) model.delete(step.key);
            else model.set(step.key, `v${i}`);
          }
          dead = true;
          // Power loss: every file the journal names lost its applied bytes; the dead instance is not closed.
          for (const key of new Set(journalLog(dir).flatMap((r) => r.ops.map((o) => o.key)))) rmSync(join(dir, key), { force: true });
          const r = fsStorage({ dir, journal: true, clock: later });
          await r.ready();
          for (const key of ['r/a/latest.json', 'r/a/index.json', 'r/b/latest.json']) {
            const got = await r.get(key);
            expect(got && utf8(got.bytes), key).toBe(model.get(key));
          }
          expect(journalRecords(dir)).toBe(0);
          await r.close();
        },
      ),
      { numRuns: 20 },
    );
  });
});
