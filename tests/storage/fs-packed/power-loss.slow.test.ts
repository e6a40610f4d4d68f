/**
 * Power loss, simulated, for the packed store: the file-system calls of a life (writes, groups,
 * rotations, compactions, a close) are recorded, and every on-disk state a crash can leave under
 * POSIX rules (tests/support/power-loss/crash-states.ts) is written out and the store opened on
 * it: every acknowledged write is there with its version (the write in flight at the crash may be
 * there whole, never in part), and the store takes a new write with a version never given.
 */
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BatchOperation } from 'savepoint';
import { storeContents } from '../../support/store-contents.js';
import { createPackedFsStorage, type PackedFsOptions, type PackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { durableState, forEachCrashState, type CrashState } from '../../support/power-loss/crash-states.js';
import { writeTree, type Op, type Tree } from '../../support/power-loss/model.js';
import { record } from '../../support/power-loss/recorder.js';

const SCRATCH = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const SMALL: Omit<PackedFsOptions, 'dir'> = { segmentBytes: 240, compactMinBytes: 0, compactLiveRatio: 0.6 };
let OPTIONS = SMALL;

function scratch(label: string): { dir: string; dispose(): void } {
  const dir = realpathSync(mkdtempSync(join(SCRATCH, `savepoint-packed-power-${label}-`)));
  return { dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A step of a life: one call, made after the previous one was answered. */
type Step = readonly BatchOperation[];
const put = (key: string, value: string): BatchOperation => ({ type: 'put', key, bytes: encoder.encode(value) });
const del = (key: string): BatchOperation => ({ type: 'delete', key });
const pad = (s: string): string => s.padEnd(36, '.');

/** Overwrites and deletes enough for rotations and compactions of mostly dead segments. */
function lifeSteps(life: number): Step[] {
  const steps: Step[] = [];
  for (let i = 0; i < 9; i++) {
    steps.push([put(`k${i % 3}`, pad(`life ${life} step ${i}`))]);
    if (i % 3 === 2) steps.push([put(`b${i}`, pad(`batch ${i}`)), del(`k${(i + 1) % 3}`)]);
  }
  steps.push([del('b2')]);
  return steps;
}

/** What the acknowledged steps left: key → value and version. */
type Model = Map<string, { value: string; version: string | undefined }>;

function apply(model: Model, step: Step, versions: readonly (string | undefined)[]): void {
  step.forEach((op, i) => {
    if (op.type === 'put') model.set(op.key, { value: decoder.decode(op.bytes), version: versions[i] });
    else if (op.type === 'delete') model.delete(op.key);
  });
}

/** The acknowledgement of step `index` with its versions, as the recorder keeps it (its `run` is free text). */
const ackLabel = (versions: readonly (string | undefined)[]): string => JSON.stringify(versions);

async function life(
  store: PackedFsStorage,
  steps: readonly Step[],
  ack: (index: number, versions: (string | undefined)[]) => void,
): Promise<void> {
  for (let i = 0; i < steps.length; i++) {
    const outcomes = await store.batch(steps[i]!);
    ack(
      i,
      outcomes.map((o) => (o.type === 'put' ? o.version : undefined)),
    );
  }
}

async function recordLife(base: Tree, steps: readonly Step[]): Promise<{ ops: Op[]; rotations: number; compactions: number }> {
  const tmp = scratch('rec');
  try {
    writeTree(base, tmp.dir);
    const rec = record(tmp.dir, base);
    try {
      const store = createPackedFsStorage({ dir: tmp.dir, ...OPTIONS });
      await life(store, steps, (index, versions) => rec.ack(ackLabel(versions), index));
      const { rotations, compactions } = store.stats();
      await store.close();
      return { ops: rec.ops, rotations, compactions };
    } finally {
      rec.stop();
    }
  } finally {
    tmp.dispose();
  }
}

const sorted = (m: Model): [string, { value: string; version: string | undefined }][] => [...m].sort(([a], [b]) => (a < b ? -1 : 1));

/** What is wrong with the store opened on `state` (undefined: nothing). */
async function stateProblem(state: CrashState, start: Model, steps: readonly Step[]): Promise<string | undefined> {
  const model: Model = new Map(start);
  const given = new Set<string>();
  for (const { run, sequence } of state.acked) {
    const versions = JSON.parse(run) as (string | null)[];
    apply(
      model,
      steps[sequence]!,
      versions.map((v) => v ?? undefined),
    );
    for (const v of versions) if (v) given.add(v);
  }
  const tmp = scratch('state');
  try {
    writeTree(state.tree, tmp.dir);
    const store = createPackedFsStorage({ dir: tmp.dir, ...OPTIONS });
    try {
      const found = await storeContents(store);
      // The step after the last acknowledged one may have landed whole (its versions not known here).
      const next = steps[state.acked.length];
      const withNext: Model = new Map(model);
      if (next)
        apply(
          withNext,
          next,
          next.map(() => undefined),
        );
      const unknownVersions = (m: Model): unknown[] =>
        sorted(m).map(([k, v]) => [k, v.value, next?.some((op) => op.key === k) ? '?' : v.version]);
      const same = JSON.stringify(sorted(found)) === JSON.stringify(sorted(model));
      const sameWithNext = JSON.stringify(unknownVersions(found)) === JSON.stringify(unknownVersions(withNext));
      if (!same && !sameWithNext) return `found ${JSON.stringify(sorted(found))}, acknowledged ${JSON.stringify(sorted(model))}`;
      const { version } = await store.put('after-crash', encoder.encode('x'));
      if (given.has(version)) return `version ${version} given again`;
      return undefined;
    } finally {
      await store.close();
    }
  } catch (err) {
    return `threw ${String(err)}`;
  } finally {
    tmp.dispose();
  }
}

describe('packed fs store under a simulated power loss', () => {
  // O_DSYNC writes are durable when they return; write + fdatasync leaves unsynced (and torn) writes to choose among.
  it.each(['dsync', 'fdatasync'] as const)(
    '%s: every crash state of two lives (groups, rotations, compactions, a reopen) keeps every acknowledged write with its version',
    async (sync) => {
      OPTIONS = { ...SMALL, sync };
      const empty: Tree = { dirs: new Map([['', new Map()]]), inodes: new Map() };
      const problems: string[] = [];
      let states = 0;
      const sweep = async (base: Tree, start: Model, steps: readonly Step[]): Promise<Op[]> => {
        const { ops, rotations, compactions } = await recordLife(base, steps);
        expect(rotations).toBeGreaterThan(1);
        expect(compactions).toBeGreaterThan(0);
        states += await forEachCrashState(
          base,
          ops,
          async (state) => {
            const problem = await stateProblem(state, start, steps);
            if (problem !== undefined && problems.length < 5) problems.push(`${state.label}: ${problem}`);
          },
          { randomPerPoint: 1 },
        );
        return ops;
      };
      const first = lifeSteps(1);
      const ops = await sweep(empty, new Map(), first);
      // The second life opens what a crash right after the first life's last acknowledgement leaves at least.
      const lastAck = ops.map((o) => o.t).lastIndexOf('ack');
      const base2 = durableState(empty, ops.slice(0, lastAck + 1));
      const start: Model = new Map();
      for (const o of ops.slice(0, lastAck + 1)) {
        if (o.t === 'ack')
          apply(
            start,
            first[o.sequence]!,
            (JSON.parse(o.run) as (string | null)[]).map((v) => v ?? undefined),
          );
      }
      await sweep(base2, start, lifeSteps(2));
      console.log(`packed power loss (${sync}): ${states} crash states`);
      expect(problems).toEqual([]);
      expect(states).toBeGreaterThan(100);
    },
    900_000,
  );
});
