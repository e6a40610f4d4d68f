import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planRetention, type RetentionPlan, type RetentionPolicy, type RetentionRule } from 'savepoint';
import { type InventoryRun, type RetentionInventory } from 'savepoint/toolkit';
import { inventoryArb, NOW, optionsArb, policyArb } from './arbitraries.js';
import { durationMs, referencePlan } from './reference.js';

const RUNS = { numRuns: 300 };
const isKept = (a: string): boolean => a === 'keep' || a === 'compress';
const key = (runId: string, id: string): string => `${runId}\u0000${id}`;

function decisions(plan: RetentionPlan): Map<string, { action: string; reasons: readonly string[] }> {
  return new Map(plan.snapshots.map((p) => [key(p.snapshot.runId, p.snapshot.id), { action: p.action, reasons: p.reasons }]));
}

/** The plan as plain data, without object identity (for comparing plans). */
function normalize(plan: RetentionPlan): unknown {
  return {
    snapshots: plan.snapshots.map((p) => [p.snapshot.runId, p.snapshot.id, p.action, [...p.reasons]]),
    runs: plan.runs,
    operations: plan.operations,
    totals: plan.totals,
    unreadable: plan.unreadable,
  };
}

/** What storage would look like after applying `plan` in full: the inventory a new scan would give. */
function applied(inv: RetentionInventory, plan: RetentionPlan): RetentionInventory {
  const byKey = decisions(plan);
  const deletedKeys = new Set(plan.operations.flatMap((o) => (o.type === 'delete' ? [o.key] : [])));
  const summaries = new Set(plan.operations.flatMap((o) => (o.type === 'write-summary' ? [o.runId] : [])));
  const planRuns = new Map(plan.runs.map((r) => [r.runId, r]));
  const runs = inv.runs.map((run): InventoryRun => {
    const pr = planRuns.get(run.runId)!;
    const final =
      run.snapshots.find((s) => s.latest) ??
      [...run.snapshots].sort((a, b) => b.sequence - a.sequence || b.createdAtMs - a.createdAtMs || (b.id > a.id ? 1 : -1))[0];
    const summary =
      run.summary ??
      (summaries.has(run.runId)
        ? { key: run.summaryKey!, version: 's', size: 10, ...(final ? { lastCheckpointAtMs: final.createdAtMs } : {}) }
        : undefined);
    if (pr.deleteRun) {
      return {
        runId: run.runId,
        snapshots: [],
        summaryKey: run.summaryKey!,
        summary: { ...summary!, lastCheckpointAtMs: final ? final.createdAtMs : summary!.lastCheckpointAtMs! },
        batches: [],
        orphanParts: [],
        unreadable: run.unreadable.filter((u) => !deletedKeys.has(u.key)),
      };
    }
    const snapshots = run.snapshots
      .filter((s) => isKept(byKey.get(key(run.runId, s.id))!.action))
      // A run thinned to latest.json loses its kept snapshot's history and batch files.
      .map((s) => ({
        ...s,
        files: s.files.filter((f) => !deletedKeys.has(f.key)),
        batches: s.batches.filter((b) => !deletedKeys.has(b)),
        parts: s.parts.filter((p) => !deletedKeys.has(p.key)),
      }))
      .map((s) => {
        if (byKey.get(key(run.runId, s.id))!.action !== 'compress') return s;
        const plain = s.files.find((f) => !f.compressed)!;
        return { ...s, files: [{ key: `${plain.key}.gz`, version: 'gz', size: 40, compressed: true }] };
      });
    const indexOp = plan.operations.find((o) => o.type === 'update-index' && o.runId === run.runId);
    let index = run.index && !deletedKeys.has(run.index.key) ? run.index : undefined;
    if (index && indexOp && indexOp.type === 'update-index') {
      const remove = new Set(indexOp.remove);
      const rename = new Set(indexOp.rename);
      index = {
        ...index,
        entries: index.entries
          .filter((e) => !remove.has(e.checkpoint_id))
          .map((e) => (rename.has(e.checkpoint_id) ? { ...e, file_path: `${e.file_path}.gz` } : e)),
      };
    }
    const { index: _index, ...rest } = run;
    return {
      ...rest,
      snapshots,
      ...(summary ? { summary } : {}),
      ...(index ? { index } : {}),
      batches: run.batches.filter((b) => !deletedKeys.has(b.key)),
      orphanParts: run.orphanParts.filter((p) => !deletedKeys.has(p.key)),
      unreadable: run.unreadable.filter((u) => !deletedKeys.has(u.key)),
    };
  });
  return { ...inv, runs };
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let x = seed | 1;
  for (let i = out.length - 1; i > 0; i--) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** A policy where one count or duration (chosen by `pick`) is raised by `by` (≥ 1 unit). */
function raise(policy: RetentionPolicy, pick: number, by: number): RetentionPolicy {
  const slots: ((p: RetentionPolicy) => RetentionPolicy)[] = [];
  const withRule = (i: number, f: (r: RetentionRule) => RetentionRule) => (p: RetentionPolicy) => ({
    ...p,
    rules: p.rules.map((r, j) => (j === i ? f(r) : r)),
  });
  const more = (d: number | string | undefined): number | string | undefined =>
    d === undefined ? undefined : durationMs(d) + by * 3_600_000;
  policy.rules.forEach((r, i) => {
    switch (r.rule) {
      case 'keep-last':
        slots.push(withRule(i, () => ({ ...r, count: r.count + by })));
        if (r.maxAge !== undefined) slots.push(withRule(i, () => ({ ...r, maxAge: more(r.maxAge)! })));
        break;
      case 'keep-within':
        slots.push(withRule(i, () => ({ ...r, duration: more(r.duration)! })));
        break;
      case 'keep-calendar':
        slots.push(withRule(i, () => ({ ...r, count: r.count + by })));
        if (r.maxAge !== undefined) slots.push(withRule(i, () => ({ ...r, maxAge: more(r.maxAge)! })));
        break;
      case 'run-tiers':
        slots.push(withRule(i, () => ({ ...r, keepAll: r.keepAll + by })));
        slots.push(withRule(i, () => ({ ...r, keepFinal: r.keepFinal + by })));
        break;
      default:
        break;
    }
  });
  if (policy.compressAfter !== undefined) slots.push((p) => ({ ...p, compressAfter: more(p.compressAfter)! }));
  if (slots.length === 0) return policy;
  return slots[pick % slots.length]!(policy);
}

describe('planRetention properties', () => {
  it('partition: every snapshot gets exactly one action; kept ones have ≥ 1 reason, removed ones none', () => {
    fc.assert(
      fc.property(inventoryArb, policyArb, optionsArb, (inv, policy, options) => {
        const plan = planRetention(inv, policy, NOW, options);
        const all = inv.runs.flatMap((r) => r.snapshots.map((s) => key(r.runId, s.id)));
        expect(plan.snapshots.map((p) => key(p.snapshot.runId, p.snapshot.id)).sort()).toEqual([...all].sort());
        for (const p of plan.snapshots) {
          expect(['keep', 'compress', 'summarize', 'delete']).toContain(p.action);
          expect(p.reasons.length > 0).toBe(isKept(p.action));
        }
        const t = plan.totals;
        expect(t.keep + t.compress + t.summarize + t.delete).toBe(all.length);
        // The totals are counted without building the operations; they must agree with them.
        const deletes = plan.operations.filter((o) => o.type === 'delete');
        expect(t.filesDeleted).toBe(deletes.length);
        expect(t.bytesFreed).toBe(deletes.reduce((sum, o) => sum + (o.type === 'delete' ? o.size : 0), 0));
        expect(plan.operations.filter((o) => o.type === 'compress').length).toBe(t.compress);
      }),
      RUNS,
    );
  });

  it('matches the slow reference planner on random inventories', () => {
    fc.assert(
      fc.property(inventoryArb, policyArb, optionsArb, (inv, policy, options) => {
        const plan = planRetention(inv, policy, NOW, options);
        const ref = referencePlan(inv, policy, NOW, options);
        for (const p of plan.snapshots) {
          const r = ref.snapshots.get(key(p.snapshot.runId, p.snapshot.id))!;
          expect({ id: key(p.snapshot.runId, p.snapshot.id), action: p.action, reasons: [...p.reasons].sort() }).toEqual({
            id: key(p.snapshot.runId, p.snapshot.id),
            action: r.action,
            reasons: [...r.reasons].sort(),
          });
        }
        expect(plan.runs.filter((r) => r.deleteRun).map((r) => r.runId)).toEqual([...ref.deletedRuns].sort());
        expect(plan.runs.filter((r) => r.latestOnly).map((r) => r.runId)).toEqual([...ref.latestOnlyRuns].sort());
      }),
      RUNS,
    );
  });

  it('never deletes a run latest, a preserved run, or the latest snapshot of a status the policy keeps', () => {
    fc.assert(
      fc.property(inventoryArb, policyArb, optionsArb, (inv, policy, options) => {
        const plan = planRetention(inv, policy, NOW, options);
        const d = decisions(plan);
        const deletedRuns = new Set(plan.runs.filter((r) => r.deleteRun).map((r) => r.runId));
        const preservedByRule = (runId: string): boolean =>
          policy.rules.some((r) => r.rule === 'preserve-runs' && r.runIds.includes(runId));
        for (const run of inv.runs) {
          if (deletedRuns.has(run.runId)) {
            // Only on request: the plan's flag, or the policy's tiers saying "summary only" (the phased spec's runs 51+).
            expect(options.allowRunDeletion || policy.rules.some((r) => r.rule === 'run-tiers' && r.archiveKeeps === 'summary')).toBe(true);
            expect(plan.runs.find((r) => r.runId === run.runId)!.tier).toBe('archive');
            expect(plan.operations.some((o) => o.type === 'write-summary' && o.runId === run.runId) || run.summary !== undefined).toBe(
              true,
            );
            continue;
          }
          const latest = run.snapshots.find((s) => s.latest);
          if (latest) expect(isKept(d.get(key(run.runId, latest.id))!.action)).toBe(true);
          const maxSeq = [...run.snapshots].sort((a, b) => b.sequence - a.sequence)[0];
          if (maxSeq) expect(isKept(d.get(key(run.runId, maxSeq.id))!.action)).toBe(true);
          if (inv.preservedRuns.includes(run.runId) || preservedByRule(run.runId) || !inv.preservedRunsReadable) {
            for (const s of run.snapshots) expect(d.get(key(run.runId, s.id))!.action).not.toMatch(/delete|summarize/);
            expect(plan.operations.some((o) => o.runId === run.runId && (o.type === 'delete' || o.type === 'write-summary'))).toBe(false);
          }
          for (const rule of policy.rules) {
            if (rule.rule !== 'keep-latest-status') continue;
            const withStatus = run.snapshots.filter((s) => s.status === rule.status);
            const newest = withStatus[withStatus.length - 1];
            if (newest) expect(isKept(d.get(key(run.runId, newest.id))!.action)).toBe(true);
          }
        }
        // Only keys of the inventory are ever touched.
        const known = new Set(
          inv.runs.flatMap((r) => [
            ...r.snapshots.flatMap((s) => [...s.files.map((f) => f.key), ...s.batches, ...s.parts.map((p) => p.key)]),
            ...r.orphanParts.map((p) => p.key),
            ...r.unreadable.map((u) => u.key),
            ...(r.latest ? [r.latest.key] : []),
            ...(r.index ? [r.index.key] : []),
          ]),
        );
        for (const op of plan.operations) if (op.type === 'delete' || op.type === 'compress') expect(known.has(op.key)).toBe(true);
        // latest.json goes only with its run; the index also when the run keeps latest.json alone.
        const latestOnly = new Set(plan.runs.filter((r) => r.latestOnly).map((r) => r.runId));
        for (const op of plan.operations) if (op.type === 'delete' && op.kind === 'latest') expect(deletedRuns.has(op.runId)).toBe(true);
        for (const op of plan.operations)
          if (op.type === 'delete' && op.kind === 'index') expect(deletedRuns.has(op.runId) || latestOnly.has(op.runId)).toBe(true);
        // A run thinned to latest.json keeps it, and the parts of the snapshot it holds.
        for (const run of inv.runs) {
          if (!latestOnly.has(run.runId)) continue;
          const held = run.snapshots.find((s) => s.latest)!;
          const deleted = new Set(plan.operations.flatMap((o) => (o.type === 'delete' ? [o.key] : [])));
          expect(run.latest && !deleted.has(run.latest.key)).toBe(true);
          for (const p of held.parts) expect(deleted.has(p.key)).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it('bound: per run, keep-last keeps at most N; kept ≤ N + what other rules keep', () => {
    fc.assert(
      fc.property(inventoryArb, policyArb, optionsArb, (inv, policy, options) => {
        const plan = planRetention(inv, policy, NOW, options);
        for (const run of inv.runs) {
          const mine = plan.snapshots.filter((p) => p.snapshot.runId === run.runId);
          for (const rule of policy.rules) {
            if (rule.rule !== 'keep-last' && rule.rule !== 'keep-calendar') continue;
            const byRule = mine.filter((p) => p.reasons.includes(rule.name!));
            expect(byRule.length).toBeLessThanOrEqual(rule.count);
            if (rule.rule === 'keep-last') {
              const kept = mine.filter((p) => isKept(p.action)).length;
              const byOthers = mine.filter((p) => p.reasons.some((r) => r !== rule.name)).length;
              expect(kept).toBeLessThanOrEqual(rule.count + byOthers);
            }
          }
        }
      }),
      RUNS,
    );
  });

  it('idempotence: planning again over what a plan kept deletes nothing more', () => {
    fc.assert(
      fc.property(inventoryArb, policyArb, optionsArb, (inv, policy, options) => {
        const plan = planRetention(inv, policy, NOW, options);
        const after = applied(inv, plan);
        const again = planRetention(after, policy, NOW, options);
        expect(again.snapshots.filter((p) => !isKept(p.action)).map((p) => key(p.snapshot.runId, p.snapshot.id))).toEqual([]);
        expect(again.operations.filter((o) => o.type === 'delete' || o.type === 'compress' || o.type === 'update-index')).toEqual([]);
        const keptBefore = plan.snapshots.filter((p) => isKept(p.action)).map((p) => key(p.snapshot.runId, p.snapshot.id));
        expect(again.snapshots.map((p) => key(p.snapshot.runId, p.snapshot.id))).toEqual(keptBefore);
        expect(again.runs.map((r) => [r.runId, r.rank])).toEqual(plan.runs.map((r) => [r.runId, r.rank]));
      }),
      RUNS,
    );
  });

  it('monotonicity: raising any count or duration never turns a keep into a delete', () => {
    fc.assert(
      fc.property(inventoryArb, policyArb, optionsArb, fc.nat(), fc.integer({ min: 1, max: 30 }), (inv, policy, options, pick, by) => {
        const before = decisions(planRetention(inv, policy, NOW, options));
        const raisedPlan = planRetention(inv, raise(policy, pick, by), NOW, options);
        const after = decisions(raisedPlan);
        for (const [k, d] of before)
          if (isKept(d.action)) expect({ k, action: after.get(k)!.action }).toEqual({ k, action: expect.stringMatching(/keep|compress/) });
      }),
      RUNS,
    );
  });

  it('determinism: the plan does not depend on the order of runs or snapshots', () => {
    fc.assert(
      fc.property(inventoryArb, policyArb, optionsArb, fc.nat(), (inv, policy, options, seed) => {
        const shuffledInv: RetentionInventory = {
          ...inv,
          runs: shuffled(inv.runs, seed).map((r, i) => ({ ...r, snapshots: shuffled(r.snapshots, seed + i + 1) })),
        };
        expect(normalize(planRetention(shuffledInv, policy, NOW, options))).toEqual(normalize(planRetention(inv, policy, NOW, options)));
      }),
      RUNS,
    );
  });

  it('an empty policy keeps everything', () => {
    fc.assert(
      fc.property(inventoryArb, optionsArb, fc.option(fc.constantFrom('1h', '3d'), { nil: undefined }), (inv, options, compressAfter) => {
        const plan = planRetention(inv, { rules: [], ...(compressAfter ? { compressAfter } : {}) }, NOW, options);
        expect(plan.snapshots.every((p) => isKept(p.action) && p.reasons.includes('no-rules'))).toBe(true);
        expect(plan.operations.filter((o) => o.type === 'delete' && o.reason !== 'unreadable')).toEqual([]);
      }),
      RUNS,
    );
  });

  it("the phased spec's tiers alone (latest.json only, summary only): matches the reference, keeps latest.json, and a second plan over the result does nothing", () => {
    const specTiers = fc.record({ keepAll: fc.nat({ max: 2 }), keepFinal: fc.nat({ max: 3 }) }).map((t): RetentionPolicy => ({
      name: 'spec-tiers',
      rules: [{ rule: 'run-tiers', ...t, finalKeeps: 'latest', archiveKeeps: 'summary' }],
    }));
    let latestOnlyRuns = 0;
    fc.assert(
      fc.property(inventoryArb, specTiers, optionsArb, (inv, policy, options) => {
        const plan = planRetention(inv, policy, NOW, options);
        const ref = referencePlan(inv, policy, NOW, options);
        expect(plan.runs.filter((r) => r.latestOnly).map((r) => r.runId)).toEqual([...ref.latestOnlyRuns].sort());
        expect(plan.runs.filter((r) => r.deleteRun).map((r) => r.runId)).toEqual([...ref.deletedRuns].sort());
        for (const p of plan.snapshots) expect(p.action).toBe(ref.snapshots.get(key(p.snapshot.runId, p.snapshot.id))!.action);
        for (const r of plan.runs) {
          if (!r.latestOnly) continue;
          latestOnlyRuns++;
          const run = inv.runs.find((x) => x.runId === r.runId)!;
          expect(plan.operations.some((o) => o.type === 'delete' && o.key === run.latest!.key)).toBe(false);
          expect(plan.operations.some((o) => o.type === 'write-summary' && o.runId === r.runId)).toBe(false);
        }
        const again = planRetention(applied(inv, plan), policy, NOW, options);
        expect(again.operations.filter((o) => o.type === 'delete' || o.type === 'compress' || o.type === 'update-index')).toEqual([]);
      }),
      { numRuns: 200 },
    );
    expect(latestOnlyRuns).toBeGreaterThan(0); // the generator does reach the tier
  });
});
