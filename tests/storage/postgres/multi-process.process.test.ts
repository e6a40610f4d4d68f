/**
 * Many processes, one server: 8 writers on 8 runs at once, and the run lock between "hosts"
 * (children with different host names, so neither can probe the other's process): exactly one
 * writes, the live one keeps its lease by renewing it, and a dead one's run is taken over once
 * its lease expires.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { buildChildBundle, spawnPgChild, type ChildBundle, type LineChild } from './child.js';
import { freshTable, hasPostgres, usePostgres } from '../../support/postgres-fixture.js';
import { ackedOf, verifyRun } from './verify-run.js';

const { server } = usePostgres();
let bundle: ChildBundle;
beforeAll(async () => {
  if (hasPostgres) bundle = await buildChildBundle();
}, 120_000);
afterAll(() => bundle?.dispose());

const noThrow = (c: LineChild): void => {
  expect(
    c.lines.filter((l) => l.startsWith('THREW')),
    c.stderr(),
  ).toEqual([]);
};

(hasPostgres ? describe : describe.skip)('postgresStorage shared by processes', () => {
  it('8 child processes write 8 runs at once (first use of a new table included): every checkpoint lands, every run is whole', async () => {
    const table = freshTable('eight');
    const children = Array.from({ length: 8 }, (_, i) =>
      spawnPgChild(bundle, 'writer-child.mjs', { url: server().url, table, runId: `run-${i}`, count: 20 }),
    );
    const exits = await Promise.all(children.map((c) => c.exited));
    const storage = postgresStorage({ connectionString: server().url, table });
    try {
      for (const [i, c] of children.entries()) {
        expect(exits[i], c.stderr()).toEqual({ code: 0, signal: null });
        noThrow(c);
        const acked = ackedOf(c.lines);
        expect(acked.size, c.lines.join('\n')).toBe(20);
        expect([...acked.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, k) => k + 1));
        expect(await verifyRun(storage, `run-${i}`, acked)).toEqual({ history: 20, latestSequence: 20 });
      }
    } finally {
      await storage.close();
    }
  });

  it('two processes on two hosts race for one run: exactly one writes, the other is refused with checkpoint_run_locked', async () => {
    const table = freshTable('race');
    for (let round = 0; round < 4; round++) {
      const runId = `race-${round}`;
      // Both keep writing until stopped, so neither can finish and release the run before the other tries.
      const racers = ['host-a', 'host-b'].map((hostname) =>
        spawnPgChild(bundle, 'writer-child.mjs', { url: server().url, table, runId, count: 0, hostname, pauseMs: 20 }),
      );
      const first = await Promise.all(racers.map((c) => c.waitFor((l) => l.startsWith('opened') || l.startsWith('open-failed'))));
      const winners = racers.filter((_, i) => first[i] === 'opened 0');
      const losers = racers.filter((_, i) => first[i] === 'open-failed checkpoint_run_locked');
      expect(first.length === 2 && winners.length, first.join(' / ')).toBe(1);
      expect(losers.length).toBe(1);
      await winners[0]!.waitFor((l) => l.startsWith('ack 5 '));
      winners[0]!.proc.kill('SIGKILL');
      await Promise.all(racers.map((c) => c.exited));
      racers.forEach(noThrow);
      expect(losers[0]!.lines.some((l) => l.startsWith('ack'))).toBe(false);
      const storage = postgresStorage({ connectionString: server().url, table });
      try {
        const acked = ackedOf(winners[0]!.lines);
        expect((await verifyRun(storage, runId, acked)).history).toBeGreaterThanOrEqual(acked.size);
      } finally {
        await storage.close();
      }
    }
  });

  it('the live writer renews its lease so another host cannot take the run; once it dies the lease expires and the other host takes over', async () => {
    const table = freshTable('lease');
    const leaseMs = 1500;
    const holder = spawnPgChild(bundle, 'writer-child.mjs', {
      url: server().url,
      table,
      runId: 'leased',
      count: 0,
      hostname: 'host-a',
      leaseMs,
      pauseMs: 50,
    });
    try {
      await holder.waitFor((l) => l.startsWith('ack 3 '));
      // For three lease periods, a writer on another host keeps being refused: the holder renews.
      const until = Date.now() + 3 * leaseMs;
      let attempts = 0;
      while (Date.now() < until) {
        const other = spawnPgChild(bundle, 'writer-child.mjs', {
          url: server().url,
          table,
          runId: 'leased',
          count: 1,
          hostname: 'host-b',
          leaseMs,
        });
        await other.exited;
        noThrow(other);
        expect(other.lines, other.stderr()).toEqual(['open-failed checkpoint_run_locked']);
        attempts++;
      }
      expect(attempts).toBeGreaterThan(0);
    } finally {
      holder.proc.kill('SIGKILL');
    }
    await holder.exited;
    noThrow(holder);
    const acked = ackedOf(holder.lines);
    const storage = postgresStorage({ connectionString: server().url, table });
    try {
      // The dead holder's lease runs out; then host-b takes the run over and continues its numbering.
      let taker: LineChild | undefined;
      const deadline = Date.now() + 20 * leaseMs;
      for (;;) {
        const c = spawnPgChild(bundle, 'writer-child.mjs', {
          url: server().url,
          table,
          runId: 'leased',
          count: 2,
          hostname: 'host-b',
          leaseMs,
        });
        await c.exited;
        noThrow(c);
        if (c.lines[0]?.startsWith('opened')) {
          taker = c;
          break;
        }
        expect(c.lines[0]).toBe('open-failed checkpoint_run_locked');
        if (Date.now() > deadline) throw new Error("the dead holder's run was never taken over");
        await new Promise((r) => setTimeout(r, 200));
      }
      const maxAcked = Math.max(...acked.keys());
      const opened = Number(taker.lines[0]!.split(' ')[1]);
      expect(opened).toBeGreaterThanOrEqual(maxAcked);
      const takerAcks = ackedOf(taker.lines);
      expect([...takerAcks.keys()]).toEqual([opened + 1, opened + 2]);
      await verifyRun(storage, 'leased', new Map([...acked, ...takerAcks]));
    } finally {
      await (storage as PostgresStorage).close();
    }
  });
});
