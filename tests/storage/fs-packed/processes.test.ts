/**
 * Two packed stores on one directory in one process: the cheap model of several processes
 * (each store has its own index, hold of the lock and token, exactly as another process would).
 * Writes on either are decided against everything acknowledged on both; reads on either see it.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from '../../../src/contract/errors.js';
import { listAll } from '../../../src/contract/storage.js';
import { createPackedFsStorage, type PackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { LOCK_NAME } from '../../../src/storage/fs-packed/lock.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-procs');
let n = 0;

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);
const open = (dir: string, writes: 'async' | 'sync' | 'adaptive' = 'async'): PackedFsStorage =>
  createPackedFsStorage({ dir, lingerMs: 1, writes });

type Op =
  | {
      readonly on: number;
      readonly kind: 'put';
      readonly key: string;
      readonly value: string;
      readonly cond: 'none' | 'absent' | 'current' | 'stale';
    }
  | { readonly on: number; readonly kind: 'delete'; readonly key: string; readonly cond: 'none' | 'current' }
  | { readonly on: number; readonly kind: 'get'; readonly key: string };

const keyArb = fc.constantFrom('a', 'b', 'dir/c');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    on: fc.nat(1),
    kind: fc.constant('put' as const),
    key: keyArb,
    value: fc.string({ maxLength: 6 }),
    cond: fc.constantFrom('none' as const, 'absent' as const, 'current' as const, 'stale' as const),
  }),
  fc.record({
    on: fc.nat(1),
    kind: fc.constant('delete' as const),
    key: keyArb,
    cond: fc.constantFrom('none' as const, 'current' as const),
  }),
  fc.record({ on: fc.nat(1), kind: fc.constant('get' as const), key: keyArb }),
);

/** Runs `op` on `store` against the model; checks the outcome is the model's. */
async function step(
  store: PackedFsStorage,
  op: Op,
  model: Map<string, { value: string; version: string }>,
  stale: Map<string, string>,
  versions: Set<string>,
): Promise<void> {
  const now = model.get(op.key);
  if (op.kind === 'get') {
    const got = await store.get(op.key);
    expect(got && { value: text(got.bytes), version: got.version }).toEqual(now);
    return;
  }
  if (op.kind === 'delete') {
    const options = op.cond === 'current' ? { ifVersion: now?.version ?? 'none' } : {};
    const outcome = await store.delete(op.key, options).catch((err: unknown) => err);
    if (op.cond === 'current' && !now) return expect((outcome as CheckpointError).reasonCode).toBe('checkpoint_conflict');
    expect(outcome).toBe(now !== undefined);
    if (now) stale.set(op.key, now.version);
    model.delete(op.key);
    return;
  }
  const options =
    op.cond === 'absent'
      ? { ifAbsent: true }
      : op.cond === 'current'
        ? { ifVersion: now?.version ?? 'none' }
        : op.cond === 'stale'
          ? { ifVersion: stale.get(op.key) ?? 'none' }
          : {};
  const refused = (op.cond === 'absent' && now) || (op.cond === 'current' && !now) || op.cond === 'stale';
  const outcome = await store.put(op.key, bytes(op.value), options).catch((err: unknown) => err);
  if (refused) return expect((outcome as CheckpointError).reasonCode).toBe('checkpoint_conflict');
  const { version } = outcome as { version: string };
  expect(versions.has(version)).toBe(false);
  versions.add(version);
  if (now) stale.set(op.key, now.version);
  model.set(op.key, { value: op.value, version });
}

describe('packed stores on one directory (the model of several processes)', () => {
  it('any sequence of calls on either of two stores acts as on one store', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 30 }),
        fc.constantFrom('async' as const, 'sync' as const, 'adaptive' as const),
        async (ops, writes) => {
          const dir = join(base, `model-${n++}`);
          const stores = [open(dir, writes), open(dir, writes)];
          const model = new Map<string, { value: string; version: string }>();
          try {
            for (const op of ops) await step(stores[op.on]!, op, model, new Map(), new Set());
            for (const store of stores) for (const [key, now] of model) expect(text((await store.get(key))?.bytes)).toBe(now.value);
          } finally {
            await Promise.all(stores.map((s) => s.close()));
          }
          // Reopened, the store holds what the model holds.
          const again = open(dir);
          try {
            for (const key of ['a', 'b', 'dir/c']) {
              const got = await again.get(key);
              expect(got && { value: text(got.bytes), version: got.version }).toEqual(model.get(key));
            }
          } finally {
            await again.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('racing conditional writes from two stores: exactly one wins each round, versions never repeat', async () => {
    const dir = join(base, `race-${n++}`);
    const stores = [open(dir), open(dir), open(dir)];
    const versions = new Set<string>();
    try {
      let { version } = await stores[0]!.put('k', bytes('base'));
      versions.add(version);
      for (let round = 0; round < 20; round++) {
        const results = await Promise.allSettled(
          stores.flatMap((s, i) => [0, 1].map((j) => s.put('k', bytes(`${round}:${i}:${j}`), { ifVersion: version }))),
        );
        const won = results.filter((r) => r.status === 'fulfilled');
        expect(won).toHaveLength(1);
        for (const r of results) if (r.status === 'rejected') expect((r.reason as CheckpointError).reasonCode).toBe('checkpoint_conflict');
        version = (won[0] as PromiseFulfilledResult<{ version: string }>).value.version;
        expect(versions.has(version)).toBe(false);
        versions.add(version);
        for (const s of stores) expect((await s.get('k'))?.version).toBe(version);
      }
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('increments from three stores at once lose no update', async () => {
    const dir = join(base, `count-${n++}`);
    const stores = [open(dir), open(dir), open(dir)];
    const each = 15;
    const increment = async (s: PackedFsStorage): Promise<void> => {
      for (;;) {
        const got = await s.get('counter');
        const next = String(Number(text(got?.bytes) ?? '0') + 1);
        const put = got ? s.put('counter', bytes(next), { ifVersion: got.version }) : s.put('counter', bytes(next), { ifAbsent: true });
        const ok = await put.then(
          () => true,
          (err: CheckpointError) => {
            if (err.reasonCode !== 'checkpoint_conflict') throw err;
            return false;
          },
        );
        if (ok) return;
      }
    };
    try {
      await Promise.all(
        stores.map(async (s) => {
          for (let i = 0; i < each; i++) await increment(s);
        }),
      );
      for (const s of stores) expect(text((await s.get('counter'))?.bytes)).toBe(String(each * stores.length));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('the lock is let go once idle, and closing leaves no token behind', async () => {
    const dir = join(base, `idle-${n++}`);
    const a = open(dir);
    // Making the first manifest took the lock; it is let go once the store is open.
    expect(await a.get('x')).toBeUndefined();
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false);
    const b = open(dir);
    await a.put('x', bytes('1'));
    // b takes the lock only once a lets it go (lingerMs after its last group).
    await b.put('x', bytes('2'));
    expect(text((await a.get('x'))?.bytes)).toBe('2');
    await Promise.all([a.close(), b.close()]);
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false);
    expect(readdirSync(dir).filter((name) => name.startsWith('.sp\\tmp-'))).toEqual([]);
  });

  it('a read where nothing moved makes no call through the pool; one after another store wrote tails and sees it', async () => {
    const dir = join(base, `still-${n++}`);
    const counts = { fstat: 0, stat: 0 };
    const io: PackedIo = {
      ...realPackedIo,
      fstat: (fd) => (counts.fstat++, realPackedIo.fstat(fd)),
      stat: (path) => (counts.stat++, realPackedIo.stat(path)),
    };
    const reader = createPackedFsStorage({ dir, lingerMs: 1 }, { io });
    const writer = open(dir);
    await writer.put('x', bytes('1'));
    expect(text((await reader.get('x'))?.bytes)).toBe('1');
    // The reader holds no lock: each read checks the files, on the event loop while nothing moved.
    const before = { ...counts };
    for (let i = 0; i < 20; i++) expect(text((await reader.get('x'))?.bytes)).toBe('1');
    expect(counts).toEqual(before);
    await writer.put('x', bytes('2'));
    expect(text((await reader.get('x'))?.bytes)).toBe('2');
    expect(counts.fstat).toBeGreaterThan(before.fstat);
    await Promise.all([reader.close(), writer.close()]);
  });

  it('a write landing after its lease ran out and the lock was broken is not acknowledged, and overwrites nothing acknowledged', async () => {
    const dir = join(base, `late-${n++}`);
    // A's writes wait at this gate when it is closed: a write whose thread runs late (a stopped or starved process).
    let gate: Promise<void> | undefined;
    let entered: () => void = () => undefined;
    const io: PackedIo = {
      ...realPackedIo,
      async writeAt(fd, bytes, position) {
        if (gate) {
          entered();
          await gate;
        }
        return realPackedIo.writeAt(fd, bytes, position);
      },
    };
    // Writes on the pool: a lone write on the event loop cannot run late while the loop goes on.
    const a = createPackedFsStorage({ dir, leaseMs: 1000, lingerMs: 60_000, writes: 'async' }, { io });
    const b = createPackedFsStorage({ dir, leaseMs: 1000, lingerMs: 1 });
    try {
      await a.put('a', bytes('one'));
      let open: () => void = () => undefined;
      gate = new Promise<void>((resolve) => (open = resolve));
      const inGate = new Promise<void>((resolve) => (entered = resolve));
      const late = a.put('late', bytes('never acknowledged')).then(
        () => 'acknowledged',
        (err: CheckpointError) => (err.details as { reason?: string } | undefined)?.reason,
      );
      await inGate;
      // B waits out A's lease, breaks the lock and writes.
      const b1 = await b.put('b', bytes('two'));
      const c1 = await b.put('c', bytes('three'));
      gate = undefined;
      open();
      expect(await late).toBe('packed_lease_lost');
      // Every process, and a later open, reads B's acknowledged writes; A's late write is nowhere.
      for (const store of [a, b]) {
        expect(await store.get('b')).toEqual({ bytes: bytes('two'), version: b1.version });
        expect(await store.get('c')).toEqual({ bytes: bytes('three'), version: c1.version });
        expect(await store.get('late')).toBeUndefined();
      }
      // A goes on once B lets the lock go.
      await a.put('after', bytes('four'));
      expect(text((await b.get('after'))?.bytes)).toBe('four');
    } finally {
      gate = undefined;
      await Promise.all([a.close(), b.close()]);
    }
    const again = open(dir);
    try {
      for (const [key, value] of [
        ['a', 'one'],
        ['b', 'two'],
        ['c', 'three'],
        ['after', 'four'],
      ])
        expect(text((await again.get(key!))?.bytes), key).toBe(value);
      expect(await again.get('late')).toBeUndefined();
    } finally {
      await again.close();
    }
  });

  it("a store follows another's rotations and compactions: every value read with its version, writes go on in the new segments", async () => {
    const dir = join(base, `follow-${n++}`);
    const small = { segmentBytes: 2048, compactMinBytes: Infinity, lingerMs: 1 };
    const a = createPackedFsStorage({ dir, ...small });
    const b = createPackedFsStorage({ dir, ...small });
    const written = new Map<string, string>();
    try {
      await b.get('warm');
      for (let i = 0; i < 60; i++) {
        const key = `k/${i % 20}`;
        written.set(key, (await a.put(key, bytes(`${'v'.repeat(100)}${i}`))).version);
      }
      expect(a.stats().rotations).toBeGreaterThan(0);
      const check = async (store: PackedFsStorage): Promise<void> => {
        for (const [key, version] of written) expect((await store.get(key))?.version, key).toBe(version);
        expect((await listAll(store, 'k/')).map((e) => [e.key, e.version])).toEqual([...written].sort((x, y) => (x[0] < y[0] ? -1 : 1)));
      };
      await check(b);
      await a.compact();
      expect(a.stats().compactions).toBe(1);
      await check(b);
      written.set('k/0', (await b.put('k/0', bytes('from b'))).version);
      await check(a);
      await check(b);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a compaction whose lease ran out before its manifest was written gives way to the manifest another process wrote', async () => {
    const dir = join(base, `compact-late-${n++}`);
    let gate: Promise<void> | undefined;
    let entered: () => void = () => undefined;
    let zeroWrites = 0;
    const io: PackedIo = {
      ...realPackedIo,
      async writeAt(fd, data, position) {
        // A compaction writes its segment, then its manifest's temp file (both from 0): the manifest waits.
        if (gate && position === 0 && ++zeroWrites === 2) {
          entered();
          await gate;
        }
        return realPackedIo.writeAt(fd, data, position);
      },
    };
    const small = { segmentBytes: 1024, compactMinBytes: Infinity, leaseMs: 1000 };
    const a = createPackedFsStorage({ dir, ...small, lingerMs: 60_000 }, { io });
    const b = createPackedFsStorage({ dir, ...small, lingerMs: 1 });
    const written = new Map<string, string>();
    try {
      for (let i = 0; i < 30; i++) await a.put(`k/${i % 5}`, bytes(`${'v'.repeat(100)}${i}`));
      for (let i = 0; i < 5; i++) written.set(`k/${i}`, text((await a.get(`k/${i}`))?.bytes)!);
      let open: () => void = () => undefined;
      gate = new Promise<void>((resolve) => (open = resolve));
      const inGate = new Promise<void>((resolve) => (entered = resolve));
      const compacted = a.compact().then(
        () => 'compacted',
        (err: CheckpointError) => (err.details as { reason?: string } | undefined)?.reason,
      );
      await inGate;
      await b.put('b', bytes('from b'));
      written.set('b', 'from b');
      gate = undefined;
      open();
      expect(await compacted).toBe('packed_lease_lost');
      await a.put('a', bytes('from a'));
      written.set('a', 'from a');
    } finally {
      gate = undefined;
      await Promise.all([a.close(), b.close()]);
    }
    const again = open(dir);
    try {
      for (const [key, value] of written) expect(text((await again.get(key))?.bytes), key).toBe(value);
    } finally {
      await again.close();
    }
  });
});
