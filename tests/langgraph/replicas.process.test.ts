/**
 * Several replicas of a LangGraph service on one thread, as a load balancer spreads requests:
 * each replica a process with its own SavepointSaver on one shared store (fs, PostgreSQL, the
 * GitHub emulator), taking turns on a thread or serving it at once, some SIGKILLed mid-turn
 * (the turn is then served again by another). Checked against a model of what was
 * acknowledged: no sequence held by two checkpoints, every acknowledged checkpoint stored,
 * sequences increasing from one round of turns to the next, the newest checkpoint the last
 * one put, each turn built on the state the turn before left (a replica reading the thread's
 * head, newest checkpoint and writes in one linked read must not see an older head), and
 * `keepLast` bounding the thread, not each replica.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { githubStorage } from 'savepoint/github';
import { SavepointSaver, langGraphProfile } from 'savepoint/langgraph';
import { postgresStorage } from 'savepoint/postgres';
import { startGitHubEmulator } from 'savepoint/testing';
import { readSnapshot } from 'savepoint/toolkit';
import { bundledChildPerFile } from '../support/bundle-child.js';
import { ROOT } from '../support/build.js';
import { freshTable, hasPostgres, usePostgres } from '../support/postgres-fixture.js';
import { TOKEN } from '../support/github.js';

const bundled = bundledChildPerFile(join(ROOT, 'tests/langgraph/replica-child.ts'), 'savepoint-lg-replicas-');
const pg = hasPostgres ? usePostgres() : undefined;

/** A put a replica acknowledged: its checkpoint, thread and the round of turns it belongs to. */
interface Acked {
  readonly id: string;
  readonly thread: string;
  readonly round: number;
  readonly replica: number;
}

/** One replica process, serving one turn at a time. */
class Replica {
  private readonly child: ChildProcessWithoutNullStreams;
  /** The turns sent and not done yet: their thread, and what resolves their `serve`. */
  private readonly waiting = new Map<number, { readonly thread: string; readonly done: () => void }>();
  private readonly exited: Promise<void>;
  private firstPut: (() => void) | undefined;
  /** What it said last (stdout lines, its exit) and the end of its stderr (its steps), for a stalled scenario's report. */
  private readonly said: string[] = [];
  private stderr = '';
  /** It exited (killed, or failed a turn). */
  private gone = false;

  constructor(
    readonly index: number,
    env: Record<string, string>,
    private readonly acked: Acked[],
    private readonly roundOf: Map<number, number>,
    private readonly counts: Map<number, number>,
  ) {
    const report = ['--report-on-signal', '--report-signal=SIGUSR2', `--report-directory=${reportsDir()}`];
    this.child = spawn(process.execPath, [...report, bundled.bundle], { env: { ...process.env, ...env }, cwd: bundled.work });
    this.child.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-STDERR_KEPT)));
    // A turn written as it exits finds the pipe closed: the exit is what tells.
    this.child.stdin.on('error', () => undefined);
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        this.gone = true;
        this.note(`exited: ${code ?? signal}`);
        if (code !== 0 && signal !== 'SIGKILL')
          this.acked.push({ id: `replica ${index} failed: ${code} ${this.stderr}`, thread: '', round: -1, replica: index });
        for (const { done } of this.waiting.values()) done();
        this.waiting.clear();
        resolve();
      }),
    );
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      this.note(line);
      const message = JSON.parse(line) as { put?: string; thread?: string; turn?: number; done?: number; count?: number };
      if (message.put !== undefined) {
        this.acked.push({ id: message.put, thread: message.thread!, round: this.roundOf.get(message.turn!)!, replica: index });
        this.firstPut?.();
      }
      if (message.done !== undefined) {
        this.counts.set(message.done, message.count!);
        this.waiting.get(message.done)?.done();
        this.waiting.delete(message.done);
      }
    });
  }

  private note(line: string): void {
    this.said.push(line);
    if (this.said.length > SAID_KEPT) this.said.shift();
  }

  /**
   * Serves a turn; resolves when it is done or the process died — at once when it died before (a
   * replica that failed a turn exits; its failure is in `acked`, and a later turn sent to it
   * would otherwise wait forever).
   */
  serve(turn: number, thread: string): Promise<void> {
    if (this.gone) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.waiting.set(turn, { thread, done: resolve }));
    this.child.stdin.write(`${JSON.stringify({ turn, thread })}\n`);
    return done;
  }

  /** Resolves at the next acknowledged put. */
  nextPut(): Promise<void> {
    return new Promise((resolve) => (this.firstPut = resolve));
  }

  kill(): Promise<void> {
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /** Ends its input and waits for it to exit; one still running after {@link STOP_MS} is killed (a stop never hangs the test). */
  async stop(): Promise<void> {
    this.child.stdin.end();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_MS)));
    const outcome = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (outcome === 'late') await this.kill();
  }

  /** When a report was last asked for: only a report written since is this replica's (pids are reused). */
  private reportAskedAt = Infinity;

  /** Asks a live replica for a diagnostic report (its JavaScript stack and libuv handles, see {@link describeReport}). */
  askReport(): void {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.reportAskedAt = Date.now() - 1000;
    this.child.kill('SIGUSR2');
  }

  /** Where it stands: the turns it has not answered, what it said last, its last steps, and its report if it wrote one. */
  describe(): string {
    const turns = [...this.waiting].map(([turn, { thread }]) => `${turn} (${thread})`);
    return [
      `replica ${this.index}, pid ${this.child.pid}: turns not answered: ${turns.join(', ') || 'none'}`,
      `  said last: ${this.said.join(' | ')}`,
      `  steps (stderr): ${this.stderr.trim().split('\n').slice(-8).join(' | ')}`,
      describeReport(this.child.pid, this.reportAskedAt),
    ].join('\n');
  }
}

/** How many stdout lines and stderr characters of a replica a stalled scenario's report shows. */
const SAID_KEPT = 6;
/** How long a replica whose input ended may take to exit before it is killed. */
const STOP_MS = 30_000;
const STDERR_KEPT = 4000;

/** Where replicas write their reports (made at the first replica's start). */
function reportsDir(): string {
  const dir = join(bundled.work, 'reports');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * The top of a replica's diagnostic report (written on SIGUSR2 since `askedAt`): its JavaScript
 * stack and its active libuv handles. A report of an earlier process with the same pid, or one
 * half written, is not taken for it.
 */
function describeReport(pid: number | undefined, askedAt: number): string {
  try {
    const name = readdirSync(reportsDir()).find((n) => n.includes(`.${pid}.`) && statSync(join(reportsDir(), n)).mtimeMs >= askedAt);
    if (!name) return '  no report';
    const report = JSON.parse(readFileSync(join(reportsDir(), name), 'utf8')) as {
      javascriptStack?: { stack?: string[] };
      libuv?: { type: string; is_active?: boolean }[];
    };
    const handles = (report.libuv ?? []).filter((h) => h.is_active).map((h) => h.type);
    return `  stack: ${(report.javascriptStack?.stack ?? []).slice(0, 10).join(' ') || '(idle)'}\n  active handles: ${handles.join(', ')}`;
  } catch (err) {
    return `  report not read: ${String(err)}`;
  }
}

/** What one scenario does: replicas, threads, and rounds of turns (one turn, or several at once). */
interface Scenario {
  readonly replicas: number;
  readonly threads: readonly string[];
  readonly keepLast: number | false;
  /** Each round: the turns served together, as [replica, thread, kill after its first put]. */
  readonly rounds: readonly (readonly (readonly [number, string, boolean])[])[];
}

/** A turn served to the end: its round and thread, whether it serves again a turn whose replica was killed, the `count` its invoke returned. */
interface Served {
  readonly turn: number;
  readonly round: number;
  readonly thread: string;
  readonly again: boolean;
}

/**
 * How long a scenario may run before it is stopped and reported (it takes seconds): a replica that
 * never answers a turn would otherwise hold the test until its timeout, saying nothing.
 */
const STALL_MS = 120_000;

/** Runs a scenario; returns what was acknowledged and what each turn's invoke returned. The last round of each thread must be one turn, not killed. */
async function runScenario(
  env: Record<string, string>,
  scenario: Scenario,
  describeStore: () => string,
): Promise<{ acked: Acked[]; served: Served[]; counts: Map<number, number> }> {
  const acked: Acked[] = [];
  const roundOf = new Map<number, number>();
  const counts = new Map<number, number>();
  const served: Served[] = [];
  const replicas: Replica[] = [];
  const start = (i: number): Replica => (replicas[i] = new Replica(i, env, acked, roundOf, counts));
  for (let i = 0; i < scenario.replicas; i++) start(i);
  const progress = { turn: 0, round: 0 };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => void reportStall(replicas, progress, describeStore).then(reject, reject), STALL_MS);
  });
  try {
    await Promise.race([runRounds(scenario, replicas, start, progress, roundOf, served), stalled]);
  } finally {
    clearTimeout(timer);
    await Promise.all(replicas.map((r) => r.stop()));
  }
  return { acked, served, counts };
}

/** The scenario's rounds, one after another: each round's turns at once, a killed turn served again by the next replica. */
async function runRounds(
  scenario: Scenario,
  replicas: Replica[],
  start: (i: number) => Replica,
  progress: { turn: number; round: number },
  roundOf: Map<number, number>,
  served: Served[],
): Promise<void> {
  for (const [round, turns] of scenario.rounds.entries()) {
    progress.round = round;
    await Promise.all(
      turns.map(async ([i, thread, kill]) => {
        const t = ++progress.turn;
        roundOf.set(t, round);
        const serving = replicas[i]!.serve(t, thread);
        if (!kill) {
          served.push({ turn: t, round, thread, again: false });
          return serving;
        }
        await Promise.race([replicas[i]!.nextPut(), serving]);
        await replicas[i]!.kill();
        start(i);
        // The load balancer serves the request again, on the next replica.
        const again = ++progress.turn;
        roundOf.set(again, round);
        served.push({ turn: again, round, thread, again: true });
        return replicas[(i + 1) % scenario.replicas]!.serve(again, thread);
      }),
    );
  }
}

/** A stalled scenario's error: the round, each replica's unanswered turns, last words, steps and stack, and the store's own files. Kills the replicas. */
async function reportStall(
  replicas: readonly Replica[],
  progress: { readonly turn: number; readonly round: number },
  describeStore: () => string,
): Promise<Error> {
  try {
    for (const r of replicas) r.askReport();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const store = (() => {
      try {
        return describeStore();
      } catch (err) {
        return `not read: ${String(err)}`;
      }
    })();
    const message = [
      `the scenario stalled for ${STALL_MS / 1000} s in round ${progress.round} (last turn sent: ${progress.turn})`,
      ...replicas.map((r) => r.describe()),
      `store: ${store}`,
    ].join('\n');
    return new Error(message);
  } finally {
    await Promise.all(replicas.map((r) => r.kill()));
  }
}

/**
 * Each turn built on the thread's newest state: a turn after one turn of the round before adds
 * exactly 3 to what that turn returned, and a turn served again after a SIGKILL at least 3 (the
 * killed turn may have stored some of its puts). A replica that learned the thread from a stale
 * head, or read another checkpoint than its head's, returns less. Rounds of two turns at once on
 * a thread leave the next one unchecked.
 */
function checkCounts(scenario: Scenario, served: readonly Served[], counts: ReadonlyMap<number, number>): void {
  for (const thread of scenario.threads) {
    let before: number | undefined = 0;
    for (let round = 0; round < scenario.rounds.length; round++) {
      const turns = served.filter((s) => s.thread === thread && s.round === round);
      if (turns.length === 0) continue;
      if (turns.length > 1) {
        before = undefined;
        continue;
      }
      const count = counts.get(turns[0]!.turn);
      expect(count, `turn ${turns[0]!.turn} of ${thread} returned`).toBeTypeOf('number');
      if (before !== undefined && turns[0]!.again)
        expect(count!, `${thread}, round ${round}, served again`).toBeGreaterThanOrEqual(before + 3);
      else if (before !== undefined) expect(count, `${thread}, round ${round}: the state the turn built on`).toBe(before + 3);
      before = count;
    }
  }
}

/** Checks the store against what the replicas acknowledged. */
async function checkModel(storage: StorageAdapter, scenario: Scenario, acked: readonly Acked[]): Promise<void> {
  expect(acked.filter((a) => a.round < 0)).toEqual([]);
  for (const thread of scenario.threads) {
    const sequences = new Map<string, number>();
    for await (const entry of storage.list(`langgraph/${thread}/history/`)) {
      const snapshot = await readSnapshot(storage, langGraphProfile, entry.key);
      if (snapshot) sequences.set(snapshot.id, snapshot.sequence);
    }
    // No sequence held by two checkpoints.
    expect(new Set(sequences.values()).size).toBe(sequences.size);
    const ours = acked.filter((a) => a.thread === thread);
    if (scenario.keepLast === false) {
      // Every acknowledged checkpoint is stored.
      expect(ours.filter((a) => !sequences.has(a.id))).toEqual([]);
    } else {
      // The bound is the thread's: the last replica knew every checkpoint and kept keepLast of them.
      expect(sequences.size).toBe(scenario.keepLast);
    }
    // Rounds run one after another: each round's checkpoints above the one before's.
    const stored = ours.filter((a) => sequences.has(a.id));
    for (const a of stored)
      for (const b of stored)
        if (a.round < b.round) expect(sequences.get(a.id)!, `${a.id} (round ${a.round}) before ${b.id}`).toBeLessThan(sequences.get(b.id)!);
    // The newest checkpoint is the last one put.
    const latest = await new SavepointSaver({ storage }).getTuple({ configurable: { thread_id: thread } });
    expect(latest?.config.configurable?.['checkpoint_id']).toBe(ours.at(-1)!.id);
  }
}

/** Two replicas taking turns on one thread, request after request. */
const turnsOfTwo = (keepLast: number | false, turns: number): Scenario => ({
  replicas: 2,
  threads: ['t1'],
  keepLast,
  rounds: Array.from({ length: turns }, (_, n) => [[n % 2, 't1', false] as const]),
});

/** Eight replicas, three threads: each round a random replica per thread, sometimes two at once, sometimes killed mid-turn. */
function eightReplicas(seed: number, roundsCount: number): Scenario {
  const threads = ['a', 'b', 'c'];
  const rounds = fc
    .sample(fc.array(fc.tuple(fc.nat(7), fc.constantFrom(...threads), fc.boolean(), fc.nat(5)), { minLength: 1, maxLength: 3 }), {
      seed,
      numRuns: roundsCount,
    })
    .map((turns) => {
      const round: (readonly [number, string, boolean])[] = [];
      const busy = new Set<number>();
      const killed = new Set<number>();
      for (const [replica, thread, twice, dice] of turns) {
        if (busy.has(replica)) continue;
        busy.add(replica);
        // A killed turn is served again by the next replica: two neighbours are not both killed
        // in a round, or the second kill would take the turn served again with it.
        const kill = dice === 0 && !killed.has((replica + 1) % 8) && !killed.has((replica + 7) % 8);
        if (kill) killed.add(replica);
        round.push([replica, thread, kill]);
        const other = (replica + 3) % 8;
        if (twice && !busy.has(other)) {
          busy.add(other);
          round.push([other, thread, false]);
        }
      }
      return round;
    });
  // A last round per thread, one turn each, not killed: its last put is the newest.
  for (const [n, thread] of threads.entries()) rounds.push([[n, thread, false]]);
  return { replicas: 8, threads, keepLast: false, rounds };
}

interface StoreUnderTest {
  readonly name: string;
  readonly enabled: boolean;
  /** Turns of the two-replica scenarios, rounds of the eight-replica one (each GitHub put is a commit: fewer there). */
  readonly turns: number;
  readonly rounds: number;
  /** A fresh store: the children's REPLICA_STORE, the parent's own adapter on it, and what a stalled scenario reports of it. */
  open(): Promise<{ spec: object; storage: StorageAdapter; close(): Promise<void>; describe?: () => string }>;
}

let fsCounter = 0;
const STORES: readonly StoreUnderTest[] = [
  {
    name: 'fs',
    enabled: true,
    turns: 8,
    rounds: 14,
    open: async () => {
      const dir = join(bundled.work, `fs-${++fsCounter}`);
      const storage = fsStorage({ dir });
      // Its own files (locks, claims, a seal owed, segments): who held what when it stalled.
      const describe = (): string =>
        existsSync(dir)
          ? readdirSync(dir)
              .filter((name) => name.startsWith('.sp\\'))
              .join(', ')
          : 'no directory';
      return { spec: { kind: 'fs', dir }, storage, close: () => storage.close(), describe };
    },
  },
  {
    name: 'PostgreSQL',
    enabled: hasPostgres,
    turns: 8,
    rounds: 10,
    open: async () => {
      const connectionString = pg!.server().url;
      const table = freshTable('replicas');
      const storage = postgresStorage({ connectionString, table });
      return { spec: { kind: 'postgres', connectionString, table }, storage, close: () => storage.close() };
    },
  },
  {
    name: 'the GitHub emulator',
    enabled: true,
    // Each put is a commit: fewer turns than on the other stores.
    turns: 6,
    rounds: 6,
    open: async () => {
      const gh = await startGitHubEmulator({ token: TOKEN, secondaryLimit: false });
      const options = { owner: gh.owner, repo: gh.repo, token: TOKEN, baseUrl: gh.url };
      const storage = githubStorage(options);
      return {
        spec: { kind: 'github', ...options },
        storage,
        close: async () => {
          await storage.close();
          await gh.close();
        },
      };
    },
  },
];

for (const store of STORES) {
  describe.skipIf(!store.enabled)(`SavepointSaver replicas on ${store.name}`, () => {
    async function check(scenario: Scenario): Promise<void> {
      const opened = await store.open();
      try {
        const env: Record<string, string> = { REPLICA_STORE: JSON.stringify(opened.spec) };
        if (scenario.keepLast !== false) env['REPLICA_KEEP_LAST'] = String(scenario.keepLast);
        const { acked, served, counts } = await runScenario(env, scenario, opened.describe ?? (() => 'not described'));
        await checkModel(opened.storage, scenario, acked);
        checkCounts(scenario, served, counts);
      } finally {
        await opened.close();
      }
    }

    it('two replicas taking turns on one thread: unique increasing sequences, the newest the last put (regression: 4,4,5,5,6,6)', async () => {
      await check(turnsOfTwo(false, store.turns));
    }, 480_000);

    it('two replicas taking turns with keepLast 3: the thread keeps 3, not 3 per replica', async () => {
      await check(turnsOfTwo(3, store.turns));
    }, 480_000);

    it('eight replicas on three threads, turns on random replicas, some at once, some SIGKILLed mid-turn', async () => {
      await check(eightReplicas(store.name.length, store.rounds));
    }, 480_000);
  });
}
