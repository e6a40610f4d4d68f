/**
 * Crashes, on a server with fsync on (the realistic setting; an acknowledged commit must survive):
 * writer processes SIGKILLed 200 times mid-transaction, and the server itself stopped like a
 * power cut (`pg_ctl stop -m immediate`) mid-run and restarted. After each: no acknowledged
 * snapshot lost, no half-applied batch, and the writer fails forward (results with reason codes)
 * without ever throwing into the agent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, type CheckpointResult, type JsonValue } from 'savepoint';
import { postgresStorage } from 'savepoint/postgres';
import { buildChildBundle, spawnPgChild, type ChildBundle, type LineChild } from './child.js';
import { freshTable, hasPostgres, usePostgres } from '../../support/postgres-fixture.js';
import { ackedOf, verifyRun, verifyRunSettled } from './verify-run.js';

const KILLS = 200;
const LANES = 4;
const KILLS_PER_RUN = 5; // few snapshots per run, so automatic retention never prunes an acknowledged one

const { server } = usePostgres({ fsync: true });
let bundle: ChildBundle;
beforeAll(async () => {
  if (hasPostgres) bundle = await buildChildBundle();
}, 120_000);
afterAll(() => bundle?.dispose());

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const threw = (c: LineChild): string[] => c.lines.filter((l) => l.startsWith('THREW'));

(hasPostgres ? describe : describe.skip)('postgresStorage under crashes (fsync on)', () => {
  it(`${KILLS} SIGKILLs of writer processes mid-transaction: no acknowledged snapshot lost, no half-applied batch`, async () => {
    const table = freshTable('kills');
    const storage = postgresStorage({ connectionString: server().url, table });
    let kills = 0;
    let finishedUnkilled = 0;
    const lane = async (laneNo: number): Promise<void> => {
      let run = 0;
      let killsInRun = 0;
      let acked = new Map<number, string>();
      while (kills < KILLS) {
        if (killsInRun === KILLS_PER_RUN) {
          run++;
          killsInRun = 0;
          acked = new Map();
        }
        const runId = `lane-${laneNo}-run-${run}`;
        const child = spawnPgChild(bundle, 'writer-child.mjs', { url: server().url, table, runId, count: 8 });
        const opened = await child.waitFor((l) => l.startsWith('opened') || l.startsWith('open-failed'));
        expect(opened, child.stderr()).toMatch(/^opened \d+$/);
        // A restarted writer continues after everything acknowledged before the kill.
        expect(Number(opened.split(' ')[1])).toBeGreaterThanOrEqual(Math.max(0, ...acked.keys()));
        // Killed after its first acknowledgement, a random moment into the next transactions.
        await child.waitFor((l) => l.startsWith('ack ') || l.startsWith('fail ') || l === 'done').catch(() => undefined);
        await sleep(Math.random() * 40);
        const alive = child.proc.exitCode === null && child.proc.signalCode === null;
        if (alive) child.proc.kill('SIGKILL');
        const exit = await child.exited;
        expect(threw(child), child.stderr()).toEqual([]);
        for (const [seq, key] of ackedOf(child.lines)) acked.set(seq, key);
        if (exit.signal === 'SIGKILL') {
          kills++;
          killsInRun++;
        } else {
          expect(exit.code, child.stderr()).toBe(0);
          finishedUnkilled++;
        }
        await verifyRunSettled(storage, runId, acked); // the killed child's last statement may still be landing
      }
    };
    try {
      await Promise.all(Array.from({ length: LANES }, (_, i) => lane(i)));
    } finally {
      await storage.close();
    }
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    console.log(`[postgres crash] ${kills} kills, ${finishedUnkilled} children finished before their kill`);
  }, 900_000);

  it('the server stopped like a power cut mid-run and restarted: writers fail forward with reason codes, then continue; nothing acknowledged is lost', async () => {
    const table = freshTable('outage');
    const storage = postgresStorage({ connectionString: server().url, table, connectionTimeoutMs: 1000, poolSize: 4 });
    const writer = createWriter({
      storage,
      profile: defaultProfile,
      runId: 'outage-in-process',
      heartbeatIntervalMs: false,
      // Every acknowledged snapshot is checked afterwards, so the writer's per-run retention stays off.
      autoRetention: false,
      coalesceWindowMs: 0,
      retryBaseMs: 50,
      retryMaxMs: 200,
    });
    const children = ['outage-child-0', 'outage-child-1'].map((runId) =>
      spawnPgChild(bundle, 'writer-child.mjs', { url: server().url, table, runId, count: 0, pauseMs: 20 }),
    );
    const results: CheckpointResult<JsonValue>[] = [];
    let thrown: unknown;
    let stop = false;
    const loop = (async () => {
      for (let step = 1; !stop; step++) {
        try {
          results.push(
            await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step, pad: 'y'.repeat(1000) } }),
          );
        } catch (err) {
          thrown = err;
          return;
        }
      }
    })();
    const oks = (): number => results.filter((r) => r.ok).length;
    try {
      while (oks() < 15) await sleep(20);
      await Promise.all(children.map((c) => c.waitFor((l) => l.startsWith('ack 10 '))));
      await server().crash();
      const failedBefore = results.filter((r) => !r.ok).length;
      while (results.filter((r) => !r.ok).length < failedBefore + 3) await sleep(50);
      await server().start();
      const okAfterRestart = oks();
      while (oks() < okAfterRestart + 15) await sleep(20);
      const childAcks = children.map((c) => ackedOf(c.lines).size);
      await Promise.all(children.map((c, i) => c.waitFor((l) => l.startsWith(`ack ${childAcks[i]! + 5} `))));
    } finally {
      stop = true;
      await loop;
      children.forEach((c) => c.proc.kill('SIGKILL'));
      await Promise.all(children.map((c) => c.exited));
    }
    expect(thrown).toBeUndefined();
    const failures = results.filter((r) => !r.ok);
    expect(failures.length).toBeGreaterThan(0);
    // Every failure is a reason code the writer's caller can act on: the store was unreachable.
    expect(new Set(failures.map((f) => f.reasonCode))).toEqual(new Set(['checkpoint_storage_unavailable']));
    await writer.close();
    const acked = new Map(results.flatMap((r) => (r.ok ? [[r.sequence, r.key] as [number, string]] : [])));
    const check = postgresStorage({ connectionString: server().url, table });
    try {
      await verifyRun(check, 'outage-in-process', acked);
      for (const c of children) {
        expect(threw(c), c.stderr()).toEqual([]);
        expect(c.lines.some((l) => l === 'fail checkpoint_storage_unavailable')).toBe(true);
        await verifyRun(check, c === children[0] ? 'outage-child-0' : 'outage-child-1', ackedOf(c.lines));
      }
    } finally {
      await check.close();
      await storage.close();
    }
  }, 300_000);
});
