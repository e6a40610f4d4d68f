/**
 * The journaled commit's own path (single-checkpoint latency). A busy
 * run's batch — its keys known under the hold of the journal lock, temp files in the pool —
 * is planned without any file-system call, its record is the only call until it is durable,
 * the pool refills only once that write has returned, and the caller is answered before the
 * background apply issues its first call. And planning at once (without calls) decides every
 * condition exactly as planning through calls does: a property against memoryStorage. The
 * record, sealed in place with one digest, reads back through the Hash-based check.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BatchOperation, StorageAdapter } from 'savepoint';
import { memoryStorage } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { reserveOpenTemp, unreserveOpenTemp } from '../../../src/storage/fs/descriptor-budget.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { decodeJournal, encodeRecord, type JournalOp } from '../../../src/storage/fs/journal/index.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-commit-path');

const MAGIC = [0x53, 0x50, 0x4a, 0x32]; // a journal record starts with "SPJ2"
const isRecord = (bytes: unknown): boolean => bytes instanceof Uint8Array && bytes.length > 20 && MAGIC.every((m, i) => bytes[i] === m);

/** The real calls, logging `<name>+` when issued and `<name>-` when settled (a journal record's write is `record`). */
function loggingIo(): { io: FsIo; log: string[]; inFlight(): number } {
  const log: string[] = [];
  let inFlight = 0;
  const io = Object.fromEntries(
    Object.entries(realIo).map(([name, fn]) => [
      name,
      (...args: unknown[]): Promise<unknown> => {
        const shown = name === 'writeAt' && isRecord(args[1]) ? 'record' : name;
        log.push(`${shown}+`);
        inFlight++;
        const settle = (): void => {
          inFlight--;
          log.push(`${shown}-`);
        };
        const p = (fn as (...a: unknown[]) => Promise<unknown>)(...args);
        p.then(settle, settle);
        return p;
      },
    ]),
  ) as unknown as FsIo;
  return { io, log, inFlight: () => inFlight };
}

/** Turns of the event loop until no logged call has been in flight for a few turns (the pool's refill and the background apply start on later turns). */
async function quiet(rec: { inFlight(): number }): Promise<void> {
  let idleTurns = 0;
  for (let i = 0; i < 100_000 && idleTurns < 5; i++) {
    await new Promise((r) => setImmediate(r));
    idleTurns = rec.inFlight() === 0 ? idleTurns + 1 : 0;
  }
  expect(rec.inFlight()).toBe(0);
}

/** Turns of the event loop until the files of the batches so far were renamed into place (the apply's lull passed), then {@link quiet}. */
async function applied(rec: { log: string[]; inFlight(): number }): Promise<void> {
  for (let k = 0; k < 200_000 && !rec.log.includes('rename+'); k++) await new Promise((r) => setImmediate(r));
  await quiet(rec);
}

const checkpointOps = (i: number, bytes: Uint8Array): BatchOperation[] => [
  { type: 'put', key: `checkpoints/r/history/cp_${i}.json`, bytes, ifAbsent: true },
  { type: 'put', key: 'checkpoints/r/latest.json', bytes },
  { type: 'put', key: 'checkpoints/r/index.json', bytes },
];

describe('fsStorage journal: the commit path of a busy run', () => {
  it('plans without a call, writes its record alone, refills the pool after it and answers before the apply starts', async () => {
    const rec = loggingIo();
    // A long linger: the lock stays held between the batches (as between a busy run's checkpoints).
    const store = createFsStorage({ dir: fresh(), journal: true }, { io: rec.io, journalLingerMs: 5_000 });
    const bytes = utf8Encode(JSON.stringify({ note: 'x'.repeat(1000) }));
    try {
      for (let i = 0; i < 3; i++) {
        await store.batch!(checkpointOps(i, bytes));
        await quiet(rec);
      }
      let checked = 0;
      for (let i = 3; checked < 5 && i < 30; i++) {
        rec.log.length = 0;
        const answered = store.batch!(checkpointOps(i, bytes));
        const outcomes = await answered;
        // What the log held when the caller resumed.
        const seen = [...rec.log];
        expect(outcomes.map((o) => o.type)).toEqual(['put', 'put', 'put']);
        const start = seen.indexOf('record+');
        const end = seen.indexOf('record-');
        expect(start).toBeGreaterThanOrEqual(0);
        // A hold lasts at most a second: on a slow machine the lock may have been taken anew, and
        // a new hold reads where the journal ends (`read`) before its first record. Not a busy run's path: next batch.
        if (seen.slice(0, start).includes('read+')) {
          // Its apply waited for too (under load it started beside the next batch's record).
          await applied(rec);
          continue;
        }
        checked++;
        // No call of its own before the record (regression: the pool's refill opened two files while the batch was planned).
        expect(seen.slice(0, start)).toEqual([]);
        // Nothing beside the record's O_DSYNC write (the refill's file creations slowed it).
        expect(seen.slice(start + 1, end)).toEqual([]);
        // Answered before the apply's first call (regression: the apply's writes were issued ahead of the caller's resumption).
        expect(seen.slice(end + 1).filter((c) => c.endsWith('+'))).toEqual([]);
        // And then the pool refilled and the files were applied (once the commits paused: the apply's lull, a few ms).
        await applied(rec);
        expect(rec.log).toContain('open+');
        expect(rec.log).toContain('rename+');
      }
      expect(checked).toBe(5);
    } finally {
      await store.close();
    }
  });
});

/**
 * Commits `batchOf(i)` for i from `from`, each once the store is quiet, until `count` of them
 * were committed within one hold of the journal lock (a new hold reads where the journal
 * ends first: not a busy run's path), and returns the calls each made before its record.
 */
async function callsBeforeRecords(
  rec: ReturnType<typeof loggingIo>,
  store: StorageAdapter,
  batchOf: (i: number) => BatchOperation[],
  from: number,
  count: number,
): Promise<string[][]> {
  const before: string[][] = [];
  for (let i = from; before.length < count && i < from + 30; i++) {
    await quiet(rec);
    rec.log.length = 0;
    await store.batch!(batchOf(i));
    const seen = [...rec.log];
    const start = seen.indexOf('record+');
    expect(start).toBeGreaterThanOrEqual(0);
    if (!seen.slice(0, start).includes('read+')) before.push(seen.slice(0, start));
  }
  expect(before).toHaveLength(count);
  return before;
}

describe('fsStorage journal: the commit path past what is at hand', () => {
  it('past the open temp files of the process, puts take closed temp files made ahead: no call before the record', async () => {
    // The process's open temp files all taken (a busy run whose applies lag a few hundred puts behind).
    let reserved = 0;
    while (reserveOpenTemp()) reserved++;
    const rec = loggingIo();
    const store = createFsStorage({ dir: fresh(), journal: true }, { io: rec.io, journalLingerMs: 5_000 });
    const bytes = utf8Encode(JSON.stringify({ note: 'x'.repeat(1000) }));
    try {
      // The first batches find no closed temp file ready and ask the refills for them.
      for (let i = 0; i < 3; i++) await store.batch!(checkpointOps(i, bytes));
      // Regression: each put made its closed temp file on the commit path (open, fstat, close).
      expect(await callsBeforeRecords(rec, store, (i) => checkpointOps(i, bytes), 3, 5)).toEqual([[], [], [], [], []]);
      await store.flush!();
      for (let i = 0; i < 8; i++) expect((await store.get(`checkpoints/r/history/cp_${i}.json`))?.bytes).toEqual(bytes);
    } finally {
      await store.close();
      for (let i = 0; i < reserved; i++) unreserveOpenTemp();
    }
  });

  it("a new directory beside ones listed under the hold is known missing: no walk on its put's commit path, and the files land", async () => {
    const dir = fresh();
    // The thread's parts/ directory made before this hold (another process's, or an earlier hold's).
    mkdirSync(join(dir, 'thread', 'parts', '0'), { recursive: true });
    const rec = loggingIo();
    const store = createFsStorage({ dir, journal: true }, { io: rec.io, journalLingerMs: 5_000 });
    const partOf = (i: number): BatchOperation[] => [
      { type: 'put', key: `thread/parts/${i}/w_task.json`, bytes: utf8Encode(`writes ${i}`) },
    ];
    try {
      // The first new directories are walked (and their parent listed in the background).
      for (let i = 1; i <= 3; i++) await store.batch!(partOf(i));
      // Regression: each new parts/<n>/ was walked (an open that fails) before the record.
      expect(await callsBeforeRecords(rec, store, partOf, 4, 5)).toEqual([[], [], [], [], []]);
      // A second file in a directory this hold made since, and one in a directory not made yet, in one batch.
      await store.batch!([
        { type: 'put', key: 'thread/parts/4/w_other.json', bytes: utf8Encode('other 4'), ifAbsent: true },
        { type: 'put', key: 'thread/parts/40/w_task.json', bytes: utf8Encode('writes 40'), ifAbsent: true },
      ]);
      await store.flush!();
      for (let i = 1; i <= 8; i++) expect(readFileSync(join(dir, 'thread', 'parts', String(i), 'w_task.json'), 'utf8')).toBe(`writes ${i}`);
      expect(readFileSync(join(dir, 'thread', 'parts', '4', 'w_other.json'), 'utf8')).toBe('other 4');
      expect(readFileSync(join(dir, 'thread', 'parts', '40', 'w_task.json'), 'utf8')).toBe('writes 40');
      // The conditions saw what the hold wrote there: a put ifAbsent of a key it wrote is refused.
      await expect(
        store.batch!([{ type: 'put', key: 'thread/parts/5/w_task.json', bytes: utf8Encode('again'), ifAbsent: true }]),
      ).rejects.toMatchObject({
        reasonCode: 'checkpoint_conflict',
      });
    } finally {
      await store.close();
    }
  });
});

/** One batch of the property: each operation on one of a few keys in a few directories. */
type Cond = 'none' | 'absent' | 'current' | 'stale';
type OpSpec =
  | { kind: 'put'; key: number; value: number; cond: Cond }
  | { kind: 'delete'; key: number; cond: Cond }
  | { kind: 'check'; key: number; cond: Cond };
// Two directories of one parent, made and pruned as their keys come and go (known missing from the parent's listing).
const KEYS = [
  'runs/a/latest.json',
  'runs/a/index.json',
  'runs/a/history/cp_1.json',
  'runs/b/latest.json',
  'runs/b/history/cp_1.json',
  'runs/b/parts/1/w.json',
  'runs/b/parts/2/w.json',
];
const condArb = fc.constantFrom<Cond>('none', 'absent', 'current', 'stale');
const opArb: fc.Arbitrary<OpSpec> = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), key: fc.nat(KEYS.length - 1), value: fc.nat(99), cond: condArb }),
  fc.record({ kind: fc.constant('delete' as const), key: fc.nat(KEYS.length - 1), cond: condArb }),
  fc.record({
    kind: fc.constant('check' as const),
    key: fc.nat(KEYS.length - 1),
    cond: fc.constantFrom<Cond>('absent', 'current', 'stale'),
  }),
);
const batchArb = fc.uniqueArray(opArb, { minLength: 1, maxLength: 3, selector: (o) => o.key });
/** Batches sent one after another (`together: false`) or several at once (one group commit). */
const stepArb = fc.record({ batches: fc.array(batchArb, { minLength: 1, maxLength: 3 }), together: fc.boolean() });

/** A store under test with the versions it answered (a stale one: the version before the last). */
interface Subject {
  readonly store: StorageAdapter;
  readonly versions: Map<string, string[]>;
}
function toOps(s: Subject, batch: readonly OpSpec[]): BatchOperation[] {
  return batch.map((o): BatchOperation => {
    const key = KEYS[o.key]!;
    const seen = s.versions.get(key) ?? [];
    const cond =
      o.cond === 'absent'
        ? { ifAbsent: true }
        : o.cond === 'current'
          ? { ifVersion: seen.at(-1) ?? 'none-yet' }
          : o.cond === 'stale'
            ? { ifVersion: seen.at(-2) ?? 'none-yet' }
            : {};
    if (o.kind === 'put') return { type: 'put', key, bytes: utf8Encode(`v${o.value}`), ...cond };
    if (o.kind === 'delete') return { type: 'delete', key, ...('ifVersion' in cond ? cond : {}) };
    return { type: 'check', key, ...cond } as BatchOperation;
  });
}
async function run(s: Subject, batch: readonly OpSpec[]): Promise<string> {
  try {
    const outcomes = await s.store.batch!(toOps(s, batch));
    for (const o of outcomes) {
      if (o.type === 'put') s.versions.set(o.key, [...(s.versions.get(o.key) ?? []), o.version]);
      if (o.type === 'delete') s.versions.set(o.key, [...(s.versions.get(o.key) ?? []), 'deleted']);
    }
    return JSON.stringify(outcomes.map((o) => (o.type === 'delete' ? ['delete', o.existed] : [o.type])));
  } catch (err) {
    return `refused: ${(err as { reasonCode?: string }).reasonCode}`;
  }
}
async function contents(store: StorageAdapter): Promise<(string | null)[]> {
  return Promise.all(KEYS.map(async (k) => ((await store.get(k)) ? utf8Decode((await store.get(k))!.bytes) : null)));
}

describe('fsStorage journal: planning at once decides as planning through calls (property)', () => {
  it('random batches, one after another and several at once, answer and leave what memoryStorage does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 8 }), async (steps) => {
        const fsSide: Subject = { store: createFsStorage({ dir: fresh(), journal: true }), versions: new Map() };
        const model: Subject = { store: memoryStorage(), versions: new Map() };
        try {
          for (const step of steps) {
            for (const subject of [fsSide, model]) {
              // The same stale/current choice on both sides: taken from each side's own versions before the step.
              const opsFor = step.batches;
              const answers = step.together
                ? await Promise.all(opsFor.map((b) => run(subject, b)))
                : await (async () => {
                    const out: string[] = [];
                    for (const b of opsFor) out.push(await run(subject, b));
                    return out;
                  })();
              (subject as Subject & { last?: string[] }).last = answers;
            }
            expect((fsSide as Subject & { last?: string[] }).last).toEqual((model as Subject & { last?: string[] }).last);
          }
          expect(await contents(fsSide.store)).toEqual(await contents(model.store));
        } finally {
          await Promise.all([fsSide.store.close(), model.store.close()]);
        }
      }),
      { numRuns: 25 },
    );
  });
});

describe('fsStorage journal: the record sealed in place reads back (property)', () => {
  it('any operations, bytes and epoch: decodeJournal (a Hash over epoch and body) accepts what encodeRecord sealed in one digest', () => {
    const opsArb = fc.array(
      fc.oneof(
        fc.record({
          key: fc.string({ minLength: 1, maxLength: 12 }),
          bytes: fc.uint8Array({ maxLength: 300 }),
          version: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
        }),
        fc.record({ key: fc.string({ minLength: 1, maxLength: 12 }) }),
      ),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(opsArb, fc.integer({ min: 1, max: 0xffffffff }), (ops, epoch) => {
        const journalOps = ops.map((o): JournalOp =>
          'bytes' in o ? (o.version === undefined ? ['p', o.key, o.bytes.length] : ['p', o.key, o.bytes.length, o.version]) : ['d', o.key],
        );
        const payloads = ops.flatMap((o) => ('bytes' in o ? [o.bytes] : []));
        const record = encodeRecord(journalOps, payloads, epoch);
        const found = decodeJournal(record);
        expect(found).toMatchObject({ end: record.length, epoch, torn: 0 });
        expect(found.records[0]!.ops).toEqual(
          ops.map((o) =>
            'bytes' in o
              ? { type: 'put', key: o.key, bytes: o.bytes, ...(o.version === undefined ? {} : { version: o.version }) }
              : { type: 'delete', key: o.key },
          ),
        );
      }),
      { numRuns: 100 },
    );
  });
});
