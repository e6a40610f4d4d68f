/**
 * A journaled put of a key whose previous put is acknowledged and not yet applied takes over
 * that put's temp file (8 concurrent runs): the earlier put would never reach the
 * disk — the apply merges it away — so its inode serves the later one instead of a new temp
 * file from the pool. Versions stay distinct (the mtime moves on), files land as acknowledged,
 * and a later put that is not committed gives the temp file back — or, when an apply has
 * skipped the earlier put meanwhile, has the journal replayed.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { BatchOperation, BatchOutcome, StorageAdapter } from 'savepoint';
import { memoryStorage } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { gate, heldAt } from '../../support/rename-gate.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-inherit');
const text = (s: string): Uint8Array => utf8Encode(s);
/** Gates to open after each test: a failed assertion must not leave applies held (the background lane is the process's). */
const gates: (() => void)[] = [];
afterEach(() => {
  for (const open of gates.splice(0)) open();
});
const inodeOf = (version: string): string => version.split('.')[1]!;
const versionOf = (o: BatchOutcome): string => (o as { version: string }).version;

/** Real calls; renames wait while `renames` is closed (the apply held back); the next record write fails while `failWrite` is set, after `writeHeld` resolves. */
function gatedIo(): { io: FsIo; closeRenames(): void; openRenames(): void; failNextRecord(held: Promise<void>): void } {
  const renames = gate();
  let failing: Promise<void> | undefined;
  const io: FsIo = {
    ...realIo,
    rename: heldAt(renames, realIo.rename),
    writeAt: async (fd, bytes, position) => {
      // A record (not the header of zeros that voids one).
      if (failing && bytes.some((b) => b !== 0)) {
        const held = failing;
        failing = undefined;
        await held;
        throw Object.assign(new Error('injected: record write failed'), { code: 'EIO', syscall: 'write' });
      }
      return realIo.writeAt(fd, bytes, position);
    },
  };
  gates.push(renames.open);
  return {
    io,
    closeRenames: renames.close,
    openRenames: renames.open,
    failNextRecord: (held) => {
      failing = held;
    },
  };
}

/** Waits (turns of the event loop, bounded) until `done()` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 20_000 && !done(); i++) await new Promise((r) => setImmediate(r));
  expect(done()).toBe(true);
}

describe('fsStorage journal: a replaced put takes over the temp file of the acknowledged put it replaces', () => {
  it('checkpoints acknowledged while the apply lags: latest.json reuses one inode, not one per put (regression: a new temp file per put)', async () => {
    const dir = fresh();
    const gated = gatedIo();
    const store = createFsStorage({ dir, journal: true }, { io: gated.io, journalLingerMs: 60_000 });
    gated.closeRenames();
    const latest: string[] = [];
    for (let i = 1; i <= 8; i++) {
      const out = await store.batch!([
        { type: 'put', key: `r/history/${i}.json`, bytes: text(`h${i}`), ifAbsent: true },
        { type: 'put', key: 'r/latest.json', bytes: text(`latest ${i}`) },
      ]);
      latest.push(versionOf(out[1]!));
    }
    // The first checkpoint's apply is under way (held at its rename): the second put of
    // latest.json takes a temp file of its own, every later one takes over the one before it.
    expect(new Set(latest).size).toBe(8);
    expect(new Set(latest.slice(1).map(inodeOf)).size).toBe(1);
    gated.openRenames();
    await store.flush!();
    expect(readFileSync(join(dir, 'r/latest.json'), 'utf8')).toBe('latest 8');
    for (let i = 1; i <= 8; i++) expect(readFileSync(join(dir, `r/history/${i}.json`), 'utf8')).toBe(`h${i}`);
    // The file on disk carries the version the last put was acknowledged with.
    expect((await store.get('r/latest.json'))!.version).toBe(latest[7]);
    expect(String(statSync(join(dir, 'r/latest.json'), { bigint: true }).ino)).toBe(inodeOf(latest[7]!));
    await store.close();
  });

  it('a batch refused after its put took over a temp file gives it back: the earlier put lands as acknowledged', async () => {
    const dir = fresh();
    const gated = gatedIo();
    const store = createFsStorage({ dir, journal: true }, { io: gated.io, journalLingerMs: 60_000 });
    gated.closeRenames();
    await store.put('k/a.json', text('a0'));
    const v1 = versionOf((await store.batch!([{ type: 'put', key: 'k/a.json', bytes: text('a1') }]))[0]!);
    await store.put('k/b.json', text('b'));
    // Takes over a1's temp file, then is refused by its second operation's condition.
    await expect(
      store.batch!([
        { type: 'put', key: 'k/a.json', bytes: text('a2') },
        { type: 'put', key: 'k/b.json', bytes: text('x'), ifAbsent: true },
      ]),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect(utf8Decode((await store.get('k/a.json'))!.bytes)).toBe('a1');
    gated.openRenames();
    await store.flush!();
    expect(readFileSync(join(dir, 'k/a.json'), 'utf8')).toBe('a1');
    expect((await store.get('k/a.json'))!.version).toBe(v1);
    await store.close();
  });

  it('a record that fails after an apply skipped the put it took over from: the journal is replayed, the earlier put reaches its file', async () => {
    const dir = fresh();
    const gated = gatedIo();
    const store = createFsStorage({ dir, journal: true }, { io: gated.io, journalLingerMs: 60_000 });
    gated.closeRenames();
    await store.put('s/x.json', text('x0')); // its apply starts and waits at the rename
    await store.batch!([
      { type: 'put', key: 's/h1.json', bytes: text('h1'), ifAbsent: true },
      { type: 'put', key: 's/x.json', bytes: text('x1') },
    ]);
    // The next put of x takes over x1's temp file; its record is held, then fails.
    let letFail = (): void => undefined;
    gated.failNextRecord(new Promise((r) => (letFail = r)));
    const failing = store.put('s/x.json', text('x2'));
    // Meanwhile the apply goes on: x1's group is taken (x1 skipped, its temp file no longer its own), h1 lands.
    gated.openRenames();
    await until(() => {
      try {
        return readFileSync(join(dir, 's/h1.json'), 'utf8') === 'h1';
      } catch {
        return false;
      }
    });
    letFail();
    await expect(failing).rejects.toMatchObject({ reasonCode: 'checkpoint_atomic_write_failed' });
    expect(utf8Decode((await store.get('s/x.json'))!.bytes)).toBe('x1');
    await store.flush!();
    expect(readFileSync(join(dir, 's/x.json'), 'utf8')).toBe('x1');
    await store.close();
  });

  it('property: batches of puts (some conditional) and deletes, applied late or at once, answer and land as memoryStorage holds them, each key at the version last acknowledged', async () => {
    const key = fc.constantFrom('r/latest.json', 'r/index.json', 'r/h/1.json', 'r/h/2.json');
    const op = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ type: fc.constant('put' as const), key, value: fc.string({ maxLength: 3 }), ifAbsent: fc.boolean() }),
      },
      { weight: 1, arbitrary: fc.record({ type: fc.constant('delete' as const), key }) },
    );
    const step = fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 3 }), gate: fc.constantFrom('keep', 'close', 'open') });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const dir = fresh();
        const gated = gatedIo();
        const store = createFsStorage({ dir, journal: true }, { io: gated.io, journalLingerMs: 60_000 });
        const model: StorageAdapter = memoryStorage();
        const acked = new Map<string, string | null>();
        let closed = false;
        try {
          for (const s of steps) {
            if (s.gate === 'close' && !closed) gated.closeRenames();
            if (s.gate === 'open' && closed) gated.openRenames();
            closed = s.gate === 'close' ? true : s.gate === 'open' ? false : closed;
            const ops: BatchOperation[] = s.ops.map((o) =>
              o.type === 'put'
                ? { type: 'put', key: o.key, bytes: text(o.value), ...(o.ifAbsent ? { ifAbsent: true } : {}) }
                : { type: 'delete', key: o.key },
            );
            const want = await model.batch!(ops).then(
              () => 'ok',
              (e: { reasonCode?: string }) => e.reasonCode ?? 'error',
            );
            const got = await store.batch!(ops).then(
              (out) => {
                for (const o of out) if (o.type === 'put') acked.set(o.key, o.version);
                for (const o of out) if (o.type === 'delete') acked.set(o.key, null);
                return 'ok';
              },
              (e: { reasonCode?: string }) => e.reasonCode ?? 'error',
            );
            expect(got).toBe(want);
          }
          if (closed) gated.openRenames();
          await store.flush!();
          for (const k of ['r/latest.json', 'r/index.json', 'r/h/1.json', 'r/h/2.json']) {
            const m = await model.get(k);
            const f = await store.get(k);
            expect(f === undefined ? undefined : utf8Decode(f.bytes)).toBe(m === undefined ? undefined : utf8Decode(m.bytes));
            if (m) {
              expect(readFileSync(join(dir, k), 'utf8')).toBe(utf8Decode(m.bytes));
              expect(f!.version).toBe(acked.get(k));
            }
          }
        } finally {
          if (closed) gated.openRenames();
          await store.close();
        }
      }),
      { numRuns: 25 },
    );
  });
});
