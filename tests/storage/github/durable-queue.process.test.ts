import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { githubStorage } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { bundledChildPerFile } from '../../support/bundle-child.js';
import { str, text, virtualClock } from '../../support/github.js';

// With the default queue, checkpoints acknowledged `pending: true` used to be lost by a
// crash. By default in Node the queue is now files, fsync'd before the acknowledgement, and
// the next adapter on the same repository and branch pushes what a dead process left.
const root = fileURLToPath(new URL('../../..', import.meta.url));
const bundled = bundledChildPerFile(join(root, 'tests/fixtures/github/queue-child.ts'), 'savepoint-gh-queue-');
const CHILD_TOKEN = 'ghp_childTOKENabcdefghijklmnopqrstuvwxyz01';

interface Line {
  type: string;
  pid: number;
  [k: string]: unknown;
}

function run(
  args: string[],
  cwd: string,
): { lines: Line[]; waitFor: (pred: (l: Line) => boolean) => Promise<void>; kill: () => Promise<void>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [bundled.bundle, ...args], { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Line[] = [];
  const waiters: { pred: (l: Line) => boolean; resolve: () => void }[] = [];
  createInterface({ input: child.stdout }).on('line', (t) => {
    try {
      lines.push(JSON.parse(t) as Line);
    } catch {
      return; // a line cut by SIGKILL is no acknowledgement
    }
    for (const w of [...waiters]) {
      if (!w.pred(lines.at(-1)!)) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    lines,
    waitFor: (pred) =>
      new Promise<void>((resolve, reject) => {
        if (lines.some(pred)) return resolve();
        waiters.push({ pred, resolve });
        void exited.then(() => reject(new Error(`child exited first: ${JSON.stringify(lines.slice(-3))}`)));
      }),
    async kill() {
      child.kill('SIGKILL');
      await exited; // reaped: its pid no longer counts as alive
    },
    exited,
  };
}

const work: string[] = [];
let gh: GitHubEmulator | undefined;
afterEach(async () => {
  await gh?.close();
  gh = undefined;
  for (const d of work.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the default emergency queue is durable in Node', () => {
  it('a process acknowledged `pending` and then SIGKILLed loses nothing: the next process on the same repo/branch pushes every acknowledged write', async () => {
    gh = await startGitHubEmulator({ token: CHILD_TOKEN, secondaryLimit: false, logBodies: false });
    const cwd = mkdtempSync(join(tmpdir(), 'savepoint-gh-cwd-'));
    work.push(cwd);
    gh.rateLimit.set({ remaining: 0 }); // exhausted for the next hour: every write is queued
    const writer = run(['queue', gh.url, gh.owner, gh.repo], cwd);
    await writer.waitFor((l) => l.type === 'ack' && (l.i as number) >= 7);
    await writer.kill();
    const acks = writer.lines.filter((l) => l.type === 'ack');
    expect(acks.length).toBeGreaterThanOrEqual(8);
    expect(acks.every((l) => l.pending === true && l.durable === true)).toBe(true);
    expect(gh.state.readFile('checkpoints/r1/cp_000.json')).toBeUndefined(); // nothing reached GitHub yet
    expect(readdirSync(join(cwd, '.savepoint', 'github-queue'))).toHaveLength(1);

    gh.rateLimit.set({ remaining: 5000 }); // the limit resets
    const next = run(['flush', gh.url, gh.owner, gh.repo], cwd);
    await next.waitFor((l) => l.type === 'flushed');
    expect(await next.exited).toBe(0);
    for (const ack of acks) {
      const i = ack.i as number;
      expect(str(gh.state.readFile(`checkpoints/r1/cp_${String(i).padStart(3, '0')}.json`))).toBe(`checkpoint ${i}`);
    }
    // latest.json holds the newest pushed checkpoint: the last acknowledged, or one written after it before the kill.
    const latest = Number(/checkpoint (\d+)/.exec(str(gh.state.readFile('checkpoints/r1/latest.json')) ?? '')?.[1]);
    expect(latest).toBeGreaterThanOrEqual(acks.at(-1)!.i as number);
    // The dead process's folder was adopted and emptied.
    const [queueDir] = readdirSync(join(cwd, '.savepoint', 'github-queue'));
    expect(readdirSync(join(cwd, '.savepoint', 'github-queue', queueDir!))).toEqual([]);
  }, 120_000);

  it('{ dir } chooses the folder: the queued write is a file there until pushed, and close() removes the empty folder', async () => {
    const clock = virtualClock();
    gh = await startGitHubEmulator({ token: CHILD_TOKEN, clock, secondaryLimit: false, logBodies: false });
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-gh-dir-'));
    work.push(dir);
    const open = (branch = 'main') =>
      githubStorage({
        owner: gh!.owner,
        repo: gh!.repo,
        branch,
        baseUrl: gh!.url,
        token: CHILD_TOKEN,
        clock,
        minWriteIntervalMs: 0,
        emergencyQueue: { dir },
      });
    const s = open();
    expect(s.stats().queueDurable).toBe(true);
    clock.auto = false;
    gh.rateLimit.set({ remaining: 0 });
    expect((await s.put('k', text('v'))).pending).toBe(true);
    const [folder] = readdirSync(dir);
    const [own] = readdirSync(join(dir, folder!));
    expect(readdirSync(join(dir, folder!, own!))).toEqual(['000000000001.json']);
    clock.auto = true;
    await s.close();
    expect(str(gh.state.readFile('k'))).toBe('v');
    expect(readdirSync(join(dir, folder!))).toEqual([]); // close() removes its empty folder
  });

  it('an adapter that never queues a write leaves no folder behind', async () => {
    const clock = virtualClock();
    gh = await startGitHubEmulator({ token: CHILD_TOKEN, clock, secondaryLimit: false, logBodies: false });
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-gh-none-'));
    work.push(dir);
    const s = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      baseUrl: gh.url,
      token: CHILD_TOKEN,
      clock,
      minWriteIntervalMs: 0,
      emergencyQueue: { dir: join(dir, 'q') },
    });
    await s.put('k', text('v'));
    expect(str((await s.get('k'))?.bytes)).toBe('v');
    await s.close();
    expect(readdirSync(dir)).toEqual([]);
  });

  it("'memory' keeps the queue in memory and says so", async () => {
    const clock = virtualClock();
    gh = await startGitHubEmulator({ token: CHILD_TOKEN, clock, secondaryLimit: false, logBodies: false });
    const events: { type: string; durable?: boolean; message?: string }[] = [];
    const s = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      baseUrl: gh.url,
      token: CHILD_TOKEN,
      clock,
      emergencyQueue: 'memory',
      onEvent: (e) => events.push(e),
    });
    expect(s.stats().queueDurable).toBe(false);
    clock.auto = false;
    gh.rateLimit.set({ remaining: 0 });
    expect((await s.put('k', text('v'))).pending).toBe(true);
    const queued = events.find((e) => e.type === 'write_queued');
    expect(queued).toMatchObject({ durable: false });
    expect(queued?.message).toMatch(/memory only/);
    clock.auto = true;
    await s.close();
  });
});
