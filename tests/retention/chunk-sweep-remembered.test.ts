/**
 * The chunk sweep that frees without hiding (retention/chunk-sweep-remembered.ts), on stores
 * whose every write makes a new version: a sweep remembers the unreferenced chunks with the
 * versions it listed, and a sweep of the same adapter a grace period later deletes those still
 * unreferenced at that version. It never deletes a chunk a kept checkpoint references (DESIGN
 * invariant 10): under random writers in two processes (one re-putting chunks it no longer
 * trusts, one referencing chunks it still trusts), drops, remembering sweeps of two processes and
 * hiding ones, sweeps beside a write; a writer that re-puts a chunk and writes its document
 * between a sweep's listing and its deletes; a fault and a crash at every storage call of two
 * sweeps. Each freed chunk costs one delete: no hidden copy, no move.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultProfile, listAll, memoryStorage, sweepChunks, type JsonValue, type StorageAdapter } from 'savepoint';
import { moveManyOf, moveOf, readSnapshot, type KeyMove } from 'savepoint/toolkit';
import { faultyStorage, manualClock, type FaultAction } from 'savepoint/testing';
import { fsStorage } from 'savepoint/fs';
import { scratchDirs } from '../support/scratch.js';
import { ChunkWorld } from '../support/chunk-world.js';
import { CHUNK_PREFIX, chunkKey } from '../../src/codec/chunking.js';
import { forgetWritten, rememberWritten } from '../../src/snapshot-io/chunk-cut.js';
import { forgetChunks, HIDDEN_INFIX, KNOWN_CHUNK_TTL_MS, rememberChunks } from '../../src/snapshot-io/chunk-store.js';
import { planRemembered } from '../../src/retention/chunk-sweep-remembered.js';
import { ownListKeysOf, type StorageEntry } from '../../src/contract/storage.js';

const GRACE = 60 * 60 * 1000;
const remembering = (clock: ReturnType<typeof manualClock>) => ({ clock, graceMs: GRACE, rememberUnreferenced: true }) as const;
const newDir = scratchDirs('chunk-remembered');

/** Another process's adapter over the same data: its own chunk knowledge, cache and sweep memory; the store's move carried. */
function anotherProcess(storage: StorageAdapter): StorageAdapter {
  const move = moveOf(storage);
  return { ...storage, ...(move ? { move } : {}) };
}

/** Checkpoints written by two writer processes, and what each kept key must read back as. */
class World extends ChunkWorld {
  /** The writers' adapters (processes 0 and 1) and a reader's. */
  readonly writers: StorageAdapter[];
  readonly reader: StorageAdapter;
  constructor(storage: StorageAdapter) {
    super(storage);
    this.writers = [storage, anotherProcess(storage)];
    this.reader = anotherProcess(storage);
  }
  /** A new state of `run` written by process `proc`, or `again` (a state written before: its chunks reused where `proc` trusts them). */
  write(proc: number, run: string, seed: number, again?: JsonValue): Promise<void> {
    return this.writeThrough(this.writers[proc]!, run, seed, again);
  }
  /** The writers' knowledge of chunks ends (it lasts KNOWN_CHUNK_TTL_MS): they write every chunk again. */
  forgetKnowledge(): void {
    for (const w of this.writers) {
      forgetChunks(w);
      forgetWritten(w);
    }
  }
  async check(what: string): Promise<void> {
    forgetChunks(this.reader);
    for (const [key, state] of this.kept)
      expect((await readSnapshot(this.reader, defaultProfile, key))?.payload, `${key} ${what}`).toEqual(state);
  }
}

type Step =
  | { kind: 'write'; proc: number; run: number; seed: number }
  | { kind: 'again'; proc: number; pick: number }
  | { kind: 'drop'; pick: number }
  | { kind: 'sweep'; who: number; advance: number; beside: boolean; proc: number; seed: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('write' as const), proc: fc.nat({ max: 1 }), run: fc.nat({ max: 1 }), seed: fc.integer() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }) },
  // A state written before, written again: by a process that still trusts its chunks (found unreferenced meanwhile), or re-puts them.
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('again' as const), proc: fc.nat({ max: 1 }), pick: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('sweep' as const),
      // Two remembering sweepers (processes with their own memory), and one that hides (a one-off prune).
      who: fc.nat({ max: 2 }),
      advance: fc.oneof(fc.integer({ min: 0, max: KNOWN_CHUNK_TTL_MS }), fc.integer({ min: 0, max: 2 * GRACE })),
      beside: fc.boolean(),
      proc: fc.nat({ max: 1 }),
      seed: fc.integer(),
    }),
  },
);

/** Counts, per kind, the writes a sweep makes to chunk keys (a batch's operations one by one). */
function chunkWrites(inner: StorageAdapter): { storage: StorageAdapter; counts: Record<'put' | 'delete' | 'move', number> } {
  const counts = { put: 0, delete: 0, move: 0 };
  const chunk = (key: string): boolean => key.startsWith(CHUNK_PREFIX);
  const move = moveOf(inner);
  const moveMany = moveManyOf(inner);
  const storage: StorageAdapter = {
    name: `counted-${inner.name}`,
    capabilities: inner.capabilities,
    get: (k, o) => inner.get(k, o),
    put: (k, b, o) => {
      if (chunk(k)) counts.put++;
      return inner.put(k, b, o);
    },
    delete: (k, o) => {
      if (chunk(k)) counts.delete++;
      return inner.delete(k, o);
    },
    list: (p) => inner.list(p),
    ...(inner.batch
      ? {
          batch: (ops) => {
            for (const op of ops) if (op.type !== 'check' && chunk(op.key)) counts[op.type]++;
            return inner.batch!(ops);
          },
        }
      : {}),
    close: () => inner.close(),
  };
  if (move)
    Object.assign(storage, {
      move: (from: string, to: string) => {
        counts.move++;
        return move(from, to);
      },
      ...(moveMany
        ? {
            moveMany: (moves: readonly KeyMove[]) => {
              counts.move += moves.length;
              return moveMany(moves);
            },
          }
        : {}),
    });
  return { storage, counts };
}

describe('chunk sweep without hiding (stores whose writes make new versions)', () => {
  it('planRemembered frees only a chunk unreferenced now, at the version found, found at least the grace period before; it remembers every other unreferenced chunk', () => {
    const id = fc.constantFrom<string>('a', 'b', 'c', 'd', 'e');
    const version = fc.constantFrom('1', '2', '3');
    fc.assert(
      fc.property(
        // A live chunk's version as listed or looked up, or none (listed by name, not looked up).
        fc.dictionary(id, fc.option(version, { nil: undefined })),
        fc.uniqueArray(id),
        fc.dictionary(id, fc.record({ version, atMs: fc.nat({ max: 3 * GRACE }) })),
        fc.nat({ max: 4 * GRACE }),
        (live, referencedIds, earlier, sweptAtMs) => {
          const chunks = {
            live: new Map(Object.keys(live).map((k) => [k, chunkKey(k)])),
            liveVersions: new Map(Object.entries(live).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, v]]))),
            hidden: new Map(),
          };
          const referenced = new Map(referencedIds.map((k) => [k, 'doc']));
          const times = { sweptAtMs, markedAtMs: sweptAtMs + 1, graceMs: GRACE };
          const plan = planRemembered(chunks, referenced, new Map(Object.entries(earlier)), times);
          // The version a chunk is taken at: the one listed or looked up, else the one an earlier sweep found.
          const known = (k: string): string | undefined => live[k] ?? earlier[k]?.version;
          for (const c of plan.free) {
            expect(referenced.has(c.id)).toBe(false);
            expect(c.version).toBe(known(c.id));
            expect(earlier[c.id]?.version).toBe(c.version);
            expect(sweptAtMs - earlier[c.id]!.atMs).toBeGreaterThanOrEqual(GRACE);
            expect(plan.findings.has(c.id)).toBe(false);
          }
          // Neither looked up nor found before: nothing known of its version, so neither freed nor remembered.
          const unreferenced = Object.keys(live).filter((k) => !referenced.has(k) && known(k) !== undefined);
          expect([...plan.findings.keys(), ...plan.free.map((c) => c.id)].sort()).toEqual(unreferenced.sort());
          for (const [k, f] of plan.findings) {
            expect(f.version).toBe(known(k));
            // A finding kept keeps its time; a new one (or a changed version) is timed when marking ended.
            expect(f.atMs).toBe(earlier[k]?.version === known(k) ? earlier[k]!.atMs : times.markedAtMs);
          }
        },
      ),
    );
  });

  it('never deletes a chunk a kept checkpoint references: two writer processes, drops, remembering and hiding sweeps at random times, beside writes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 16 }), async (steps) => {
        const storage = memoryStorage();
        const clock = manualClock(0);
        const world = new World(storage);
        const sweepers = [anotherProcess(storage), anotherProcess(storage), anotherProcess(storage)];
        let sinceForgotten = 0;
        for (const s of steps) {
          if (s.kind === 'write') await world.write(s.proc, `r${s.run}`, s.seed);
          else if (s.kind === 'drop') await world.drop(s.pick);
          else if (s.kind === 'again') {
            if (world.written.length > 0) await world.write(s.proc, 'r1', 0, world.written[s.pick % world.written.length]);
          } else {
            await clock.advance(s.advance);
            // Knowledge lasts KNOWN_CHUNK_TTL_MS of real time: once the manual clock has moved that far since it was last dropped, it goes.
            sinceForgotten += s.advance;
            if (sinceForgotten >= KNOWN_CHUNK_TTL_MS) {
              world.forgetKnowledge();
              sinceForgotten = 0;
            }
            const options = s.who < 2 ? remembering(clock) : { clock, graceMs: GRACE };
            const sweep = sweepChunks(sweepers[s.who]!, options);
            if (s.beside) await Promise.all([sweep, world.write(s.proc, 'r0', s.seed)]);
            else await sweep;
          }
          await world.check(`after ${JSON.stringify(s)}`);
        }
        // Once nothing references them, two remembering sweeps a grace period apart free every chunk, hidden copies too.
        for (const key of world.kept.keys()) await storage.delete(key);
        world.kept.clear();
        await sweepChunks(sweepers[0]!, remembering(clock));
        await clock.advance(GRACE);
        await sweepChunks(sweepers[0]!, remembering(clock));
        expect(await listAll(storage, CHUNK_PREFIX)).toEqual([]);
      }),
      { numRuns: 30 },
    );
  }, 240_000);

  it('a chunk found unreferenced and then referenced by a writer that still trusted it is not deleted by the sweep a grace period later', async () => {
    const storage = memoryStorage();
    const clock = manualClock(0);
    const world = new World(storage);
    const sweeper = anotherProcess(storage);
    await world.write(0, 'r0', 2);
    await world.write(0, 'r0', 3); // replaces a message: chunks of the first state alone are now its history entry's
    const first = world.written[0]!;
    await world.drop(0);
    const found = await sweepChunks(sweeper, remembering(clock));
    expect(found.remembered!.length).toBeGreaterThan(0);
    expect([found.hidden, found.deleted]).toEqual([[], []]);
    const before = await listAll(storage, CHUNK_PREFIX);
    await world.write(0, 'r1', 0, first); // trusts those chunks: its document references them, nothing put again
    expect(await listAll(storage, CHUNK_PREFIX)).toEqual(before);
    await clock.advance(GRACE);
    world.forgetKnowledge();
    const later = await sweepChunks(sweeper, remembering(clock));
    expect(later.deleted).toEqual([]);
    await world.check('after the later sweep');
  });

  /** A sweeper (another process) over `inner` that lists by name, counting the chunk entries (each with its version) its `list` yields. */
  function countingSweeper(inner: StorageAdapter): { storage: StorageAdapter; chunkVersions: () => number } {
    let chunkVersions = 0;
    const listKeys = ownListKeysOf(inner)!;
    async function* list(prefix: string): AsyncGenerator<StorageEntry> {
      for await (const entry of inner.list(prefix)) {
        if (entry.key.startsWith(CHUNK_PREFIX)) chunkVersions++;
        yield entry;
      }
    }
    const storage: StorageAdapter & { listKeys: typeof listKeys } = { ...anotherProcess(inner), list, listKeys };
    return { storage, chunkVersions: () => chunkVersions };
  }

  it.each([
    ['memory', () => memoryStorage()],
    ['fs', () => fsStorage({ dir: newDir() })],
  ])(
    'a remembering sweep on %s looks up the versions of the chunks it finds unreferenced anew alone: not of every chunk, nor again of those it remembers',
    async (_, create) => {
      const storage = create();
      const clock = manualClock(0);
      const world = new World(storage);
      await world.write(0, 'r0', 2);
      await world.write(0, 'r0', 3);
      await world.drop(0);
      const sweeper = countingSweeper(storage);
      const found = await sweepChunks(sweeper.storage, remembering(clock));
      expect(found.remembered!.length).toBeGreaterThan(0);
      expect(found.referenced).toBeGreaterThan(found.remembered!.length);
      expect(sweeper.chunkVersions()).toBe(found.remembered!.length);
      await clock.advance(GRACE / 2);
      const within = await sweepChunks(sweeper.storage, remembering(clock));
      expect([within.deleted, within.remembered]).toEqual([[], found.remembered]);
      await clock.advance(GRACE / 2);
      const later = await sweepChunks(sweeper.storage, remembering(clock));
      expect(later.deleted.length).toBe(found.remembered!.length);
      // Each delete is conditional on the version found: none looked up again.
      expect(sweeper.chunkVersions()).toBe(found.remembered!.length);
      await world.check('after the sweeps');
      await storage.close();
    },
  );

  it('a remembered chunk put again and still unreferenced: the later sweep’s delete at the version found fails, and it is found anew and freed a grace period after', async () => {
    const inner = memoryStorage();
    const clock = manualClock(0);
    const { world } = await dropped(inner);
    const sweeper = countingSweeper(inner);
    const found = await sweepChunks(sweeper.storage, remembering(clock));
    const [again, ...rest] = found.remembered!;
    expect(again).toBeDefined();
    await inner.put(chunkKey(again!), (await inner.get(chunkKey(again!)))!.bytes); // the same bytes, a new version
    await clock.advance(GRACE);
    const later = await sweepChunks(sweeper.storage, remembering(clock));
    expect(later.deleted).toEqual(rest.map(chunkKey));
    expect(later.remembered).toEqual([]); // the failed delete starts it over: the next sweep looks it up
    await world.check('after the later sweep');
    const anew = await sweepChunks(sweeper.storage, remembering(clock));
    expect([anew.deleted, anew.remembered]).toEqual([[], [again]]);
    await clock.advance(GRACE);
    expect((await sweepChunks(sweeper.storage, remembering(clock))).deleted).toEqual([chunkKey(again!)]);
    expect(sweeper.chunkVersions()).toBe(found.remembered!.length + 1);
    await world.check('after the sweeps');
  });

  /** A sweeper (another process) that lets `race` run once, just before the first delete of a chunk it makes, if it makes one. */
  function racedSweeper(inner: StorageAdapter, race: () => Promise<void>): { storage: StorageAdapter; ran: () => Promise<boolean> } {
    const sweeper = anotherProcess(inner);
    let racing: Promise<void> | undefined;
    const storage: StorageAdapter = {
      ...sweeper,
      batch: async (ops) => {
        if (ops.some((op) => op.type === 'delete' && op.key.startsWith(CHUNK_PREFIX))) await (racing ??= race());
        return sweeper.batch!(ops);
      },
    };
    return { storage, ran: async () => racing !== undefined };
  }

  /** Two checkpoints of a run, the first dropped: what only it referenced is unreferenced. The world and the dropped state. */
  async function dropped(inner: StorageAdapter): Promise<{ world: World; first: JsonValue }> {
    const world = new World(inner);
    await world.write(0, 'r0', 2);
    await world.write(0, 'r0', 3); // replaces a message: chunks of the first state alone are now its history entry's
    const first = world.written[0]!;
    await world.drop(0);
    return { world, first };
  }

  it('a writer that puts chunks again and writes its document between a sweep’s listing and its deletes: the changed chunks stay', async () => {
    const inner = memoryStorage();
    const clock = manualClock(0);
    const { world, first } = await dropped(inner);
    // Just before the later sweep deletes, another process's writer (trusting nothing) writes the first state again.
    const raced = racedSweeper(inner, () => (world.forgetKnowledge(), world.write(1, 'r1', 0, first)));
    const found = await sweepChunks(raced.storage, remembering(clock));
    expect(found.remembered!.length).toBeGreaterThan(0);
    await clock.advance(GRACE);
    const later = await sweepChunks(raced.storage, remembering(clock));
    expect(await raced.ran()).toBe(true);
    expect(later.deleted).toEqual([]); // every chunk it meant to free was written again after its listing
    await world.check('after the raced sweep');
  });

  it('a chunk put again between the sweeps by a writer that writes its document only after the later sweep listed: not deleted', async () => {
    const inner = memoryStorage();
    const clock = manualClock(0);
    const { world, first } = await dropped(inner);
    const raced = racedSweeper(inner, () => world.write(1, 'r1', 0, first));
    const found = await sweepChunks(raced.storage, remembering(clock));
    await clock.advance(GRACE);
    // Process 1 puts the chunks again (a slow write: its chunks first), and trusts them from now on.
    world.forgetKnowledge();
    for (const id of found.remembered!) await world.writers[1]!.put(chunkKey(id), (await inner.get(chunkKey(id)))!.bytes);
    rememberChunks(world.writers[1]!, found.remembered!);
    rememberWritten(world.writers[1]!, found.remembered!);
    const later = await sweepChunks(raced.storage, remembering(clock));
    if (!(await raced.ran())) await world.write(1, 'r1', 0, first); // its document, after the sweep
    expect(later.deleted).toEqual([]);
    await world.check('after the later sweep');
  });

  it('a writer that trusted a chunk before the sweep found it unreferenced and writes after a sweep within the grace period: not deleted', async () => {
    const inner = memoryStorage();
    const clock = manualClock(0);
    const { world, first } = await dropped(inner);
    const raced = racedSweeper(inner, () => world.write(0, 'r1', 0, first)); // process 0 wrote those chunks: it trusts them
    await sweepChunks(raced.storage, remembering(clock));
    await clock.advance(GRACE - 1);
    const later = await sweepChunks(raced.storage, remembering(clock));
    if (!(await raced.ran())) await world.write(0, 'r1', 0, first);
    expect(later.deleted).toEqual([]);
    await world.check('after the sweep within the grace period');
  });

  it.each([
    ['memoryStorage', async () => ({ inner: memoryStorage() as StorageAdapter, done: async () => undefined })],
    [
      "fsStorage's journal",
      async () => {
        const inner = fsStorage({ dir: newDir() });
        return { inner: inner as StorageAdapter, done: () => inner.close() };
      },
    ],
  ] as const)('each freed chunk costs one delete: no hidden copy, no move (%s)', async (_name, make) => {
    const { inner, done } = await make();
    try {
      const clock = manualClock(0);
      const world = new World(inner);
      for (let seed = 1; seed <= 5; seed++) await world.write(0, 'r0', seed);
      for (let i = 0; i < 3; i++) await world.drop(0);
      const { storage, counts } = chunkWrites(anotherProcess(inner));
      const found = await sweepChunks(storage, remembering(clock));
      expect(counts).toEqual({ put: 0, delete: 0, move: 0 }); // found, nothing hidden
      expect(found.remembered!.length).toBeGreaterThan(5);
      await clock.advance(GRACE);
      const later = await sweepChunks(storage, remembering(clock));
      expect(later.deleted).toHaveLength(found.remembered!.length);
      expect(counts).toEqual({ put: 0, delete: later.deleted.length, move: 0 });
      expect((await listAll(inner, CHUNK_PREFIX)).filter((e) => e.key.includes(HIDDEN_INFIX))).toEqual([]);
      await world.check('after the frees');
    } finally {
      await done();
    }
  });

  /**
   * A store with hidden copies (a hiding sweep of another process, past the grace period), chunks
   * unreferenced now and a writer that still trusts them; returns the world and the state that
   * writer writes again between the two remembering sweeps.
   */
  async function scene(inner: StorageAdapter, clock: ReturnType<typeof manualClock>): Promise<{ world: World; trusted: JsonValue }> {
    const world = new World(inner);
    await world.write(0, 'a', 1);
    await world.write(0, 'a', 2);
    await world.write(0, 'b', 3);
    await world.drop(0);
    await sweepChunks(anotherProcess(inner), { clock, graceMs: GRACE }); // hides what checkpoint 1 alone referenced
    await clock.advance(GRACE + 1);
    world.forgetKnowledge();
    await world.write(0, 'a', 5);
    await world.write(0, 'a', 7);
    const trusted = world.written.at(-2)!;
    await world.drop(1); // the history entry of the state with seed 5: its chunks are unreferenced, and trusted by process 0
    return { world, trusted };
  }

  for (const action of ['fail', 'fail-after', 'crash', 'crash-after'] as FaultAction[]) {
    it(`a ${action} at every storage call of two remembering sweeps loses nothing a kept checkpoint references`, async () => {
      for (let at = 0; ; at++) {
        const inner = memoryStorage();
        const clock = manualClock(0);
        const { world, trusted } = await scene(inner, clock);
        const storage = faultyStorage(anotherProcess(inner), { at, action });
        let failed = false;
        const sweep = async (): Promise<void> => {
          try {
            await sweepChunks(storage, remembering(clock));
          } catch {
            failed = true;
          }
        };
        await sweep();
        await world.write(0, 'c', 0, trusted); // references chunks the first sweep found unreferenced
        await clock.advance(GRACE + 1);
        await sweep();
        await world.check(`after a ${action} at ${at}`);
        // The restarted process (no memory) sweeps twice, a grace period apart: still nothing referenced is lost.
        const restarted = anotherProcess(inner);
        await sweepChunks(restarted, remembering(clock));
        await clock.advance(GRACE + 1);
        await sweepChunks(restarted, remembering(clock));
        await world.check(`after sweeps that followed a ${action} at ${at}`);
        if (!failed && storage.count <= at) break;
      }
    }, 120_000);
  }
});
