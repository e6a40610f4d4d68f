import fc from 'fast-check';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defaultProfile, defineProfile, isCheckpointError, standardLayout } from 'savepoint';
import { historyBySnapshotId, newSnapshotId } from 'savepoint/toolkit';
import { snapshotLifecycleRetention } from 'savepoint/snapshot-lifecycle';

describe('standardLayout', () => {
  const layout = defaultProfile.layout;
  const runId = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$/);

  it('classify inverts every key function (property)', () => {
    fc.assert(
      fc.property(runId, fc.integer({ min: 1, max: 10 ** 6 }), fc.integer({ min: 0, max: 4e12 }), (run, seq, ms) => {
        const id = newSnapshotId(ms);
        const ref = { runId: run, id, sequence: seq, source: 'manual' };
        expect(layout.classify(layout.latestKey(run))).toEqual({ kind: 'latest', runId: run, compressed: false });
        expect(layout.classify(layout.indexKey!(run))).toEqual({ kind: 'index', runId: run, compressed: false });
        expect(layout.classify(layout.lockKey(run))).toEqual({ kind: 'lock', runId: run, compressed: false });
        expect(layout.classify(layout.historyKey!(ref))).toEqual({ kind: 'history', runId: run, snapshotId: id, compressed: false });
        expect(layout.classify(`${layout.historyKey!(ref)}.gz`)).toEqual({ kind: 'history', runId: run, snapshotId: id, compressed: true });
        expect(layout.classify(layout.partKey!(ref, '1.json'))).toMatchObject({ kind: 'part', runId: run, sequence: seq });
      }),
    );
  });

  it('does not recognise keys outside the layout', () => {
    for (const key of [
      'other/run/latest.json',
      'checkpoints/latest.json',
      'checkpoints/run/history/nested/x.json',
      'checkpoints/.hidden/latest.json',
      'checkpoints/run/notes.txt',
    ]) {
      expect(layout.classify(key)).toBeUndefined();
    }
    expect(layout.classify('checkpoints/preserved_runs.json')).toEqual({ kind: 'preserved_runs', compressed: false });
  });

  it('refuses run ids that would escape or hide', () => {
    for (const bad of ['..', '.', '../x', 'a/b', '', '.hidden', 'x'.repeat(129)]) {
      expect(() => layout.latestKey(bad)).toThrow(/checkpoint_key_invalid/);
    }
  });

  it('phased-style history in the run folder itself', () => {
    const phased = standardLayout({
      history: {
        dir: '',
        name: (r) => `cp_${String(r.sequence).padStart(3, '0')}_${r.source}.json`,
        parse: (f) => {
          const m = /^cp_(\d{3,})_([a-z_]+)\.json$/.exec(f);
          return m ? { sequence: Number(m[1]), source: m[2]! } : undefined;
        },
      },
    });
    const key = phased.historyKey!({ runId: 'r', id: 'x', sequence: 7, source: 'gate_decision' });
    expect(key).toBe('checkpoints/r/cp_007_gate_decision.json');
    expect(phased.classify(key)).toEqual({ kind: 'history', runId: 'r', sequence: 7, source: 'gate_decision', compressed: false });
    expect(phased.classify('checkpoints/r/latest.json')?.kind).toBe('latest');
  });
});

describe('defaultProfile', () => {
  it('retains like snapshot-lifecycle.md, whose layout and statuses it uses (the same rules, stated as its own data)', () => {
    expect(defaultProfile.retention).toEqual(snapshotLifecycleRetention);
    expect(Object.isFrozen(defaultProfile.retention) && Object.isFrozen(defaultProfile.retention!.rules)).toBe(true);
  });
});

describe('defineProfile', () => {
  const base = {
    name: 'custom',
    payload: z.object({ n: z.number() }),
    triggers: { go: {}, timer: {} },
    statuses: { all: ['running', 'done'] as const, terminal: ['done'], active: 'running' },
    layout: standardLayout({ history: historyBySnapshotId() }),
    document: defaultProfile.document as never,
  };

  it('fills defaults from the specs', () => {
    const p = defineProfile<{ n: number }>(base);
    expect(p.coalesceWindowMs).toBe(3000);
    expect(p.heartbeat).toEqual({ source: 'timer', intervalMs: 120_000, whenUnchanged: 'write' });
    expect(p.maxSnapshotBytes).toBe(10 * 1024 * 1024);
    expect(p.isTerminal('done')).toBe(true);
    expect(p.isTerminal('running')).toBe(false);
    expect(Object.isFrozen(p)).toBe(true);
  });

  it('rejects an unknown trigger with checkpoint_schema_invalid', () => {
    const p = defineProfile<{ n: number }>(base);
    expect(() => p.trigger('nope')).toThrow(/checkpoint_schema_invalid/);
    expect(() => p.trigger('toString')).toThrow(/checkpoint_schema_invalid/);
    expect(p.trigger('go')).toEqual({});
  });

  it('rejects inconsistent definitions with checkpoint_config_invalid', () => {
    const cases = [
      { ...base, name: '1bad' },
      { ...base, triggers: {} },
      { ...base, statuses: { all: ['a'] as const, terminal: ['b'], active: 'a' } },
      { ...base, statuses: { all: ['a'] as const, terminal: ['a'], active: 'a' } },
      { ...base, heartbeat: { source: 'tick', intervalMs: 10 } },
      { ...base, coalesceWindowMs: -1 },
    ];
    for (const c of cases) {
      try {
        defineProfile<{ n: number }>(c); // string-typed names: the run-time checks are under test
        expect.unreachable(JSON.stringify(c.name));
      } catch (err) {
        expect(isCheckpointError(err, 'checkpoint_config_invalid')).toBe(true);
      }
    }
  });
});
