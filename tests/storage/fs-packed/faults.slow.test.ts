/**
 * A fault at every file-system call: each call a random sequence of writes makes (groups, recovery,
 * rotation, compaction) and each call of an open failing once, then the store reopened. Nothing
 * acknowledged is lost (value and version), a failed call is applied all or not at all, and a
 * version is never given twice.
 */
import { cpSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BatchOperation } from 'savepoint';
import { storeContents } from '../../support/store-contents.js';
import { createPackedFsStorage, type PackedFsOptions, type PackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-faults', existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
let n = 0;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The real calls, the `failAt`-th of which (counted from 0) fails once with EIO; a failing write lands half its bytes first on even counts. */
function faultyIo(failAt: number): { io: PackedIo; calls: () => number; failed: () => string | undefined } {
  let count = 0;
  let failed: string | undefined;
  const hit = (): boolean => count++ === failAt;
  const eio = (name: string): Error => Object.assign(new Error(`injected fault in ${name}`), { code: 'EIO', syscall: name });
  const io: Record<string, unknown> = {};
  for (const [name, real] of Object.entries(realPackedIo) as [string, (...args: unknown[]) => unknown][]) {
    const sync = name.endsWith('Sync');
    io[name] = (...args: unknown[]): unknown => {
      if (!hit()) return real(...args);
      const writes = name === 'writeAt' || name === 'writeAtSync';
      const torn = writes && failAt % 2 === 0;
      const bytes = args[1] as Uint8Array;
      failed = writes && bytes[0] !== 0 ? `${name} of records` : name;
      if (sync) {
        if (torn) realPackedIo.writeAtSync(args[0] as number, bytes.subarray(0, bytes.length >> 1), args[2] as number);
        throw eio(name);
      }
      return (async () => {
        if (torn) await realPackedIo.writeAt(args[0] as number, bytes.subarray(0, bytes.length >> 1), args[2] as number);
        throw eio(name);
      })();
    };
  }
  return { io: io as unknown as PackedIo, calls: () => count, failed: () => failed };
}

type Step =
  | { readonly t: 'put'; readonly key: string; readonly value: string }
  | { readonly t: 'delete'; readonly key: string }
  | { readonly t: 'ifAbsent'; readonly key: string; readonly value: string }
  | { readonly t: 'ifVersion'; readonly key: string; readonly value: string }
  | { readonly t: 'batch'; readonly puts: readonly { key: string; value: string }[]; readonly deletes: readonly string[] };

const key = fc.constantFrom('a', 'b', 'c', 'd', 'e');
const value = fc.string({ maxLength: 40 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ t: fc.constant('put' as const), key, value }),
  fc.record({ t: fc.constant('delete' as const), key }),
  fc.record({ t: fc.constant('ifAbsent' as const), key, value }),
  fc.record({ t: fc.constant('ifVersion' as const), key, value }),
  fc.record({
    t: fc.constant('batch' as const),
    puts: fc.array(fc.record({ key, value }), { maxLength: 3 }),
    deletes: fc.array(key, { maxLength: 2 }),
  }),
);
/** A plan that rotates and compacts under {@link SMALL} whatever the random plans do. */
const ROTATES_AND_COMPACTS: Step[][] = ['a', 'b', 'a', 'b', 'a', 'b'].map((k, i) => [{ t: 'put', key: k, value: `${i}`.repeat(40) }]);
/** Each turn's steps are made in one event-loop turn (so they may share a group). */
const turns = fc.array(fc.array(step, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 10 });

type Model = Map<string, { value: string; version: string }>;

/** The ops of `s` against the model (an ifVersion step names the key's current version, or a stale one when absent). */
function opsOf(s: Step, model: Model): BatchOperation[] {
  const bytes = (v: string): Uint8Array => encoder.encode(v);
  switch (s.t) {
    case 'put':
      return [{ type: 'put', key: s.key, bytes: bytes(s.value) }];
    case 'delete':
      return [{ type: 'delete', key: s.key }];
    case 'ifAbsent':
      return [{ type: 'put', key: s.key, bytes: bytes(s.value), ifAbsent: true }];
    case 'ifVersion':
      return [{ type: 'put', key: s.key, bytes: bytes(s.value), ifVersion: model.get(s.key)?.version ?? 'zz' }];
    case 'batch':
      return [
        ...s.puts.map((p): BatchOperation => ({ type: 'put', key: p.key, bytes: bytes(p.value) })),
        ...s.deletes.map((k): BatchOperation => ({ type: 'delete', key: k })),
      ];
  }
}

/** Applies ops (and their outcomes' versions) to a model. */
function apply(model: Model, ops: readonly BatchOperation[], versions: readonly (string | undefined)[]): void {
  ops.forEach((op, i) => {
    if (op.type === 'put') model.set(op.key, { value: decoder.decode(op.bytes), version: versions[i] ?? '?' });
    else if (op.type === 'delete') model.delete(op.key);
  });
}

/**
 * Small segments, so the plans rotate and compact. The default lease: a fault at the unlink that
 * lets the lock go is met by the release's second try, so no group here waits a lease out.
 */
const SMALL: Omit<PackedFsOptions, 'dir'> = { segmentBytes: 160, compactMinBytes: 0, compactLiveRatio: 0.5 };

interface Run {
  readonly model: Model;
  /** The ops of failed calls since the last group written: on disk they may be whole (never in part). */
  readonly unknown: BatchOperation[][];
  readonly versions: Set<string>;
}

/** Runs `plan` on a store over `io`; every outcome checked against the model as it goes. */
async function runPlan(store: PackedFsStorage, plan: readonly Step[][]): Promise<Run> {
  const run: Run = { model: new Map(), unknown: [], versions: new Set() };
  for (const turn of plan) {
    const calls = turn.map((s) => opsOf(s, run.model));
    const settled = await Promise.allSettled(calls.map((ops) => store.batch(ops)));
    settled.forEach((result, i) => {
      const ops = calls[i]!;
      if (result.status === 'fulfilled') {
        const versions = result.value.map((o) => (o.type === 'put' ? o.version : undefined));
        for (const v of versions) {
          if (v === undefined) continue;
          expect(run.versions.has(v)).toBe(false);
          run.versions.add(v);
        }
        apply(run.model, ops, versions);
        run.unknown.length = 0;
      } else if ((result.reason as { reasonCode?: string }).reasonCode !== 'checkpoint_conflict') run.unknown.push(ops);
    });
  }
  return run;
}

/**
 * The reopened contents are the model, or the model with a prefix of the failed calls applied
 * whole (a failed group's write may have landed some of its records; their versions are unknown).
 */
function expectAcknowledged(found: Model, run: Run): void {
  const strip = (m: Model, touched: ReadonlySet<string>): string =>
    JSON.stringify([...m].sort().map(([k, v]) => [k, v.value, touched.has(k) ? '?' : v.version]));
  const candidate: Model = new Map(run.model);
  const touched = new Set<string>();
  if (strip(found, touched) === strip(candidate, touched)) return;
  for (const ops of run.unknown) {
    apply(
      candidate,
      ops,
      ops.map(() => undefined),
    );
    for (const op of ops) touched.add(op.key);
    if (strip(found, touched) === strip(candidate, touched)) return;
  }
  expect([...found].sort()).toEqual([...run.model].sort());
}

async function freshVersionCheck(dir: string, options: Omit<PackedFsOptions, 'dir'>, run: Run): Promise<void> {
  const store = createPackedFsStorage({ dir, ...options });
  expectAcknowledged(await storeContents(store), run);
  const { version } = await store.put('fresh', encoder.encode('x'));
  expect(run.versions.has(version)).toBe(false);
  await store.close();
}

describe('packed fs store: a fault at every call', () => {
  // The default (dsync, adaptive: a lone call's group written on the event loop, others on the pool), and every group on the loop.
  for (const flavour of [{ sync: 'dsync' }, { sync: 'fdatasync', writes: 'sync' }] as const) {
    it(`a random sequence of writes with a fault at each of its calls (${flavour.sync}): nothing acknowledged lost, nothing half-applied, no version twice`, async () => {
      const options = { ...SMALL, ...flavour };
      const seen = { rotations: 0, compactions: 0, calls: 0, failed: new Set<string>() };
      await fc.assert(
        fc.asyncProperty(turns, async (plan) => {
          const clean = faultyIo(-1);
          const cleanDir = join(base, `clean-${n++}`);
          const cleanStore = createPackedFsStorage({ dir: cleanDir, ...options }, { io: clean.io });
          const cleanRun = await runPlan(cleanStore, plan);
          const { rotations, compactions } = cleanStore.stats();
          seen.rotations += rotations;
          seen.compactions += compactions;
          seen.calls = Math.max(seen.calls, clean.calls());
          await cleanStore.close();
          await freshVersionCheck(cleanDir, options, cleanRun);
          for (let failAt = 0; failAt < clean.calls(); failAt++) {
            const dir = join(base, `fault-${n++}`);
            const faulty = faultyIo(failAt);
            const store = createPackedFsStorage({ dir, ...options }, { io: faulty.io });
            const run = await runPlan(store, plan);
            seen.failed.add(faulty.failed() ?? '');
            await store.close();
            await freshVersionCheck(dir, options, run);
            rmSync(dir, { recursive: true, force: true });
          }
          rmSync(cleanDir, { recursive: true, force: true });
        }),
        // Besides the random plans, one that surely rotates (six 40-character values past a 160-byte
        // segment) and compacts (each key written three times: the sealed segments mostly dead).
        { numRuns: 8, examples: [[ROTATES_AND_COMPACTS]] },
      );
      // The sequences reached rotation and compaction, and their calls were among those failed.
      expect(seen.rotations).toBeGreaterThan(0);
      expect(seen.compactions).toBeGreaterThan(0);
      // Groups written on the event loop failed, and (by default) groups written on the pool too.
      expect(seen.failed).toContain('writeAtSync of records');
      if (!('writes' in flavour)) expect(seen.failed).toContain('writeAt of records');
    });
  }

  it('a fault at each call of an open (sealed segments, compacted ones, a torn tail): the next open finds everything', async () => {
    await fc.assert(
      fc.asyncProperty(turns, async (plan) => {
        const options = { ...SMALL, compactMinBytes: Infinity };
        const dir = join(base, `open-${n++}`);
        const store = createPackedFsStorage({ dir, ...options });
        const run = await runPlan(store, plan);
        await store.compact();
        await store.close();
        const counting = faultyIo(-1);
        const counted = createPackedFsStorage({ dir, ...options }, { io: counting.io });
        await storeContents(counted);
        await counted.close();
        for (let failAt = 0; failAt < counting.calls(); failAt++) {
          const copy = join(base, `open-copy-${n++}`);
          cpSync(dir, copy, { recursive: true });
          const faulty = createPackedFsStorage({ dir: copy, ...options }, { io: faultyIo(failAt).io });
          await storeContents(faulty).catch(() => undefined);
          await faulty.close();
          await freshVersionCheck(copy, options, run);
          rmSync(copy, { recursive: true, force: true });
        }
      }),
      { numRuns: 6 },
    );
  });
});

describe('packed fs store: after a failed durable write', () => {
  it('the next group is not appended after the failed bytes: a failed call never comes back behind an acknowledged one', async () => {
    const dir = join(base, `behind-${n++}`);
    let failNextSync = false;
    const io: PackedIo = {
      ...realPackedIo,
      async datasync(fd) {
        if (!failNextSync) return realPackedIo.datasync(fd);
        failNextSync = false;
        throw Object.assign(new Error('injected fault in datasync'), { code: 'EIO' });
      },
    };
    const store = createPackedFsStorage({ dir, sync: 'fdatasync' }, { io });
    await store.put('k', encoder.encode('kept'));
    // One group of two records, fully written, whose fdatasync fails: both calls fail.
    failNextSync = true;
    const failed = await Promise.allSettled([store.put('a', encoder.encode('1111')), store.put('b', encoder.encode('2222'))]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    // A record of the first one's size: appended over it, it would leave the second failed record whole behind it.
    await store.put('c', encoder.encode('3333'));
    await store.close();
    const again = createPackedFsStorage({ dir });
    expect([...(await storeContents(again)).keys()].sort()).toEqual(['c', 'k']);
    await again.close();
  });
});
