/**
 * Real processes on the real file system: SIGKILL crash test (≥ 100 kills with restarts)
 * and the two-writer rule. The child (tests/fixtures/writer/writer-child.ts) is bundled once
 * with esbuild so each restart costs one plain `node` start.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledChildPerFile } from '../support/bundle-child.js';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { historyOf, latestOf, triggersOf } from '../support/runs.js';
import { startJsonChild as startChild, type Line } from '../support/line-child.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bundled = bundledChildPerFile(join(root, 'tests/fixtures/writer/writer-child.ts'), 'savepoint-writer-proc-');

const start = (args: string[]): ReturnType<typeof startChild> => startChild(bundled.bundle, args);
const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('real crash test: SIGKILL a writer process at random moments, ≥ 100 times', () => {
  it('keeps every acknowledged snapshot, a valid latest and strictly increasing gap-free numbering', async () => {
    const dir = join(bundled.work, 'crash');
    const runId = 'crash-run';
    const kills = 110;
    const acks: Line[] = [];
    let openFailures = 0;
    let seed = 12345;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const t0 = Date.now();
    // Children start (slowly, on a loaded machine) while earlier ones run; each waits for "go".
    const pool = [start(['crash', dir, runId]), start(['crash', dir, runId])];
    for (let round = 0; round < kills; round++) {
      const p = pool.shift()!;
      pool.push(start(['crash', dir, runId]));
      expect(await p.waitFor((l) => l.type === 'ready', 30_000)).toBeDefined();
      p.child.stdin!.write('go\n');
      if (round % 10 === 9) {
        await sleepMs(random() * 60); // sometimes kill while opening (lock takeover, recovery)
      } else {
        const opened = await p.waitFor((l) => l.type === 'opened' || l.type === 'open-failed', 20_000);
        if (opened?.type !== 'opened') openFailures++;
        // Let 0-3 checkpoints be acknowledged, then kill somewhere inside the next write
        // (one write is several files and fsyncs, tens of ms), whatever the machine's speed.
        const k = Math.floor(random() * 4);
        if (k > 0) await p.waitFor(() => p.lines.filter((l) => l.type === 'ack').length >= k, 20_000);
        await sleepMs(random() * 30);
      }
      p.child.kill('SIGKILL');
      await p.exited;
      acks.push(...p.lines.filter((l) => l.type === 'ack'));
    }
    for (const p of pool) p.child.kill('SIGKILL');
    await Promise.all(pool.map((p) => p.exited));
    const elapsed = Date.now() - t0;

    const storage = fsStorage({ dir: dir });
    const history = await historyOf(storage, defaultProfile, runId);
    const latest = await latestOf(storage, defaultProfile, runId);
    const byId = new Map(history.map((s) => [s.id, s]));

    expect(openFailures).toBe(0); // a restart takes over the dead process's lock at once
    expect(acks.length).toBeGreaterThan(kills / 2);
    // Every acknowledged snapshot is in history, as acknowledged.
    let lastWritten = 0;
    for (const a of acks) {
      const h = byId.get(a.id as string);
      expect(h, `ack ${String(a.sequence)} missing`).toBeDefined();
      expect(h!.sequence).toBe(a.sequence);
      expect((h!.payload as { state: number }).state).toBe(a.state);
      expect(triggersOf(history, latest, h!.id).length).toBeGreaterThanOrEqual(a.details as number); // in latest or history
      if (a.outcome === 'written') {
        expect(a.sequence as number).toBeGreaterThan(lastWritten); // strictly increasing across restarts
        lastWritten = a.sequence as number;
      } else {
        expect(a.sequence).toBe(lastWritten);
      }
    }
    // History numbering: unique, strictly increasing, no gaps.
    expect(history.map((s) => s.sequence)).toEqual(Array.from({ length: history.length }, (_, i) => i + 1));
    // latest is valid, is a history snapshot, and is not older than any acknowledged one.
    expect(latest).toBeDefined();
    const h = byId.get(latest!.id)!;
    expect([h.sequence, h.payload, h.createdAt]).toEqual([latest!.sequence, latest!.payload, latest!.createdAt]);
    expect(latest!.sourceDetails.slice(0, h.sourceDetails.length)).toEqual(h.sourceDetails); // history is never rewritten: latest's list extends it
    expect(latest!.sequence).toBeGreaterThanOrEqual(lastWritten);
    // And the run goes on.
    const w = createWriter({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false });
    const after = await w.checkpoint({ source: 'manual', status: 'completed', payload: { done: true } });
    expect(after.ok && after.sequence).toBe(history.length + 1);
    await w.close();
    console.log(`crash test: ${kills} SIGKILLs in ${elapsed} ms, ${acks.length} acknowledged, ${history.length} snapshots in history`);
  }, 120_000);
});

describe('two processes on one run (the second gets checkpoint_run_locked)', () => {
  it('refuses the second writer while the first holds the run, lets it in after close', async () => {
    const dir = join(bundled.work, 'two');
    const runId = 'shared-run';
    const a = start(['hold', dir, runId]);
    const aAck = await a.waitFor((l) => l.type === 'ack' || l.type === 'fail', 15_000);
    expect(aAck).toMatchObject({ type: 'ack', sequence: 1 });
    const b = start(['try', dir, runId]);
    const bOut = await b.waitFor((l) => l.type === 'ack' || l.type === 'fail', 15_000);
    expect(bOut).toMatchObject({ type: 'fail', reason: 'checkpoint_run_locked', holderPid: a.child.pid });
    await b.exited;
    a.child.stdin!.write('close\n');
    expect(await a.waitFor((l) => l.type === 'closed', 15_000)).toBeDefined();
    await a.exited;
    const c = start(['try', dir, runId]);
    expect(await c.waitFor((l) => l.type === 'ack' || l.type === 'fail', 15_000)).toMatchObject({ type: 'ack', sequence: 2 });
    await c.exited;
  });

  it('racing writers: every success has its own sequence number, every refusal is checkpoint_run_locked', async () => {
    const dir = join(bundled.work, 'race');
    const runId = 'race-run';
    const outcomes: Line[] = [];
    for (let round = 0; round < 4; round++) {
      const ps = [start(['try', dir, runId]), start(['try', dir, runId]), start(['try', dir, runId])];
      for (const p of ps) {
        const out = await p.waitFor((l) => l.type === 'ack' || l.type === 'fail', 20_000);
        expect(out).toBeDefined();
        outcomes.push(out!);
        await p.exited;
      }
    }
    const acks = outcomes.filter((o) => o.type === 'ack').map((o) => o.sequence as number);
    const refusals = outcomes.filter((o) => o.type === 'fail').map((o) => o.reason);
    expect(acks.length).toBeGreaterThanOrEqual(4);
    expect(new Set(acks).size).toBe(acks.length); // no duplicated number
    expect([...acks].sort((x, y) => x - y)).toEqual(Array.from({ length: acks.length }, (_, i) => i + 1)); // none lost
    for (const r of refusals) expect(r).toBe('checkpoint_run_locked');
    const history = await historyOf(fsStorage({ dir }), defaultProfile, runId);
    expect(history.map((s) => s.sequence)).toEqual(Array.from({ length: acks.length }, (_, i) => i + 1));
  });
});
