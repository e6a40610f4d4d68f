/**
 * GitHub requests per checkpoint, counted on the emulator (targets: ≤ 4
 * unbatched, ≤ 0.2 amortized when batching), against the naive contents-API flow of
 * phased-workflow-github.md's n8n pattern (PUT checkpoint, GET to verify, GET + PUT
 * latest.json, GET + PUT index.json). Request counts do not depend on machine load, so
 * the figures are exact, not medians.
 *
 *   npm run bench -- github
 */
import { createWriter, type Clock } from 'savepoint';
import { emptyPhaseOutputs, phasedTriggers, phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { type TimerHandle } from 'savepoint/toolkit';
import { githubStorage, type GitHubStorage } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { fmt, type BenchRow } from './harness.js';

const TOKEN = 'ghp_benchTOKEN000000000000000000000000000';
const HOUR_BUDGET = 5000;
const CONTENT_PER_HOUR = 500; // GitHub's secondary limit on content-generating requests

/** Virtual time that jumps to the next timer as soon as something waits: the adapter's one-second pacing costs nothing here. */
function virtualClock(): Clock {
  let now = Date.UTC(2025, 11, 5, 12);
  const timers: { due: number; cb: () => void; id: number }[] = [];
  let id = 0;
  let scheduled = false;
  const pump = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      timers.sort((a, b) => a.due - b.due || a.id - b.id);
      const t = timers.shift();
      if (!t) return;
      now = Math.max(now, t.due);
      t.cb();
      if (timers.length > 0) pump();
    });
  };
  return {
    now: () => now,
    setTimeout(cb, ms) {
      timers.push({ due: now + ms, cb, id: ++id });
      pump();
      return id as TimerHandle;
    },
    clearTimeout(handle) {
      const i = timers.findIndex((t) => t.id === handle);
      if (i >= 0) timers.splice(i, 1);
    },
  };
}

function payload(at: number, cost: number): PhasedWorkflowPayload {
  return {
    phase: 'phase_2_build',
    state_snapshot: {
      phase_outputs: emptyPhaseOutputs(),
      current_phase_state: {
        phase: 'phase_2_build',
        started_at: new Date(at).toISOString(),
        progress: { step: cost },
        partial_output: null,
      },
      gate_history: [],
      circuit_breaker_state: {},
      cost_accumulated: cost,
      health_history: [],
      errors_encountered: [],
      active_lessons: [],
    },
    context_fields: { api_metrics: {}, fallback_flags: {}, iteration_counts: {}, warnings: [] },
  };
}

interface Count {
  readonly requests: number;
  readonly content: number;
}
const count = (gh: GitHubEmulator, from: number): Count => {
  const log = gh.requestLog.slice(from);
  return { requests: log.length, content: log.filter((r) => r.contentCreating).length };
};

async function setup(): Promise<{ gh: GitHubEmulator; clock: Clock; storage: (verify?: 'read-back' | 'sha') => GitHubStorage }> {
  const clock = virtualClock();
  // The content-creation limit is what a long unbatched run meets first on GitHub; it is
  // reported separately below, so the emulator does not enforce it while counting.
  const gh = await startGitHubEmulator({
    token: TOKEN,
    clock,
    logBodies: false,
    validate: false,
    secondaryLimit: false,
    rateLimit: { limit: 1_000_000 },
  });
  return {
    gh,
    clock,
    storage: (verify = 'read-back') => githubStorage({ owner: gh.owner, repo: gh.repo, token: TOKEN, baseUrl: gh.url, clock, verify }),
  };
}

/** A phasedWorkflow writer of a new run, without heartbeats; `lock` as in `unbatched`. */
function phasedWriter(storage: GitHubStorage, clock: Clock, lock: boolean) {
  return createWriter({ storage, profile: phasedWorkflow, runId: crypto.randomUUID(), clock, heartbeatIntervalMs: false, lock });
}

/**
 * A run of `n` sequential checkpoints through the writer: one commit each. `lock: false`
 * leaves the run lease out: this clock jumps to the next timer whenever the writer waits, so
 * the lease's renewal (due every 10 s of real time) would fire at every checkpoint; it is
 * counted on its own instead (`leaseRenewal`).
 */
async function unbatched(
  n: number,
  verify: 'read-back' | 'sha',
  lock = false,
): Promise<{ total: Count; steady: Count; perRenewal: number }> {
  const { gh, clock, storage } = await setup();
  try {
    const s = storage(verify);
    const writer = phasedWriter(s, clock, lock);
    const start = gh.requestLog.length;
    let afterFirst = 0;
    for (let i = 1; i <= n; i++) {
      const r = await writer.checkpoint(phasedTriggers.at('expensive_op', payload(clock.now(), i)));
      if (!r.ok) throw r.error;
      if (i === 1) afterFirst = gh.requestLog.length;
    }
    const beforeClose = gh.requestLog.length;
    await writer.close();
    const total = count(gh, start);
    const steadyLog = gh.requestLog.slice(afterFirst, beforeClose);
    return {
      total,
      steady: { requests: steadyLog.length / (n - 1), content: steadyLog.filter((r) => r.contentCreating).length / (n - 1) },
      perRenewal: perLeaseRenewal(gh, afterFirst),
    };
  } finally {
    await gh.close();
  }
}

/**
 * A run under a low rate budget: checkpoints arrive `group` at a time while a write is in
 * flight; the writer stores each group as one batch_{first}_{last}.json with latest.json
 * and index.json — one commit through the adapter's batch().
 */
async function batched(groups: number, group: number): Promise<{ total: Count; steady: Count; commits: number }> {
  const { gh, clock, storage } = await setup();
  try {
    const s = storage();
    gh.rateLimit.set({ remaining: 90 }); // below the spec's 100: rateBudget().low
    // No run lease, as in `unbatched`: this clock would renew it at every wait.
    const writer = phasedWriter(s, clock, false);
    const first = await writer.checkpoint(phasedTriggers.at('phase_complete', payload(clock.now(), 0)));
    if (!first.ok) throw first.error;
    gh.rateLimit.set({ remaining: 90 });
    const start = gh.requestLog.length;
    const commitsBefore = gh.state.log().length;
    let cost = 1;
    for (let g = 0; g < groups; g++) {
      const pending = Array.from({ length: group }, () =>
        writer.checkpoint(phasedTriggers.at('expensive_op', payload(clock.now(), cost++))),
      );
      for (const r of await Promise.all(pending)) if (!r.ok) throw r.error;
      gh.rateLimit.set({ remaining: 90 });
    }
    const steadyLog = gh.requestLog.slice(start);
    const commits = gh.state.log().length - commitsBefore;
    await writer.close();
    const checkpoints = groups * group;
    return {
      total: count(gh, 0),
      steady: { requests: steadyLog.length / checkpoints, content: steadyLog.filter((r) => r.contentCreating).length / checkpoints },
      commits,
    };
  } finally {
    await gh.close();
  }
}

/** Requests per renewal of the run lease in a run with the lease on: the requests on the lock file over its `PUT`s. */
function perLeaseRenewal(gh: GitHubEmulator, from: number): number {
  const onLock = gh.requestLog.slice(from).filter((r) => r.path.includes('.savepoint-lock'));
  const renewals = onLock.filter((r) => r.method === 'PUT').length;
  return renewals === 0 ? 0 : onLock.length / renewals;
}

/** The spec's n8n flow, request for request, with plain fetch against the emulator. */
async function naive(n: number): Promise<Count> {
  const { gh } = await setup();
  try {
    const base = `${gh.url}/repos/${gh.owner}/${gh.repo}/contents`;
    const headers = { authorization: `Bearer ${TOKEN}`, accept: 'application/vnd.github.v3+json', 'content-type': 'application/json' };
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    const runId = crypto.randomUUID();
    const dir = `checkpoints/${runId}`;
    const get = async (path: string): Promise<{ sha?: string; content?: string } | undefined> => {
      const res = await fetch(`${base}/${path}`, { headers });
      return res.status === 200 ? ((await res.json()) as { sha: string; content: string }) : undefined;
    };
    const put = async (path: string, content: string, sha?: string): Promise<void> => {
      const res = await fetch(`${base}/${path}`, {
        method: 'PUT',
        headers,
        body: JSON.stringify({ message: `Checkpoint ${path}`, content: b64(content), ...(sha ? { sha } : {}) }),
      });
      if (res.status !== 200 && res.status !== 201) throw new Error(`naive PUT ${path}: ${res.status}`);
    };
    const start = gh.requestLog.length;
    const index: { sequence: number; file_path: string }[] = [];
    for (let i = 1; i <= n; i++) {
      const doc = JSON.stringify({
        checkpoint_id: crypto.randomUUID(),
        run_id: runId,
        sequence_number: i,
        state_snapshot: payload(0, i).state_snapshot,
      });
      const cp = `${dir}/cp_${String(i).padStart(3, '0')}_expensive_op.json`;
      await put(cp, doc); // 3_write_to_github
      const back = await get(cp); // 6_verify_write
      if (!back?.content || Buffer.from(back.content, 'base64').toString() !== doc) throw new Error('naive verify failed');
      await put(`${dir}/latest.json`, doc, (await get(`${dir}/latest.json`))?.sha); // 7_update_latest (needs the current sha)
      index.push({ sequence: i, file_path: cp });
      const current = await get(`${dir}/index.json`); // 8_update_index: read, add, write
      await put(`${dir}/index.json`, JSON.stringify({ run_id: runId, checkpoint_count: index.length, checkpoints: index }), current?.sha);
    }
    return count(gh, start);
  } finally {
    await gh.close();
  }
}

export async function bench(): Promise<BenchRow[]> {
  const N = 40;
  const readBack = await unbatched(N, 'read-back');
  const shaOnly = await unbatched(N, 'sha');
  const withLease = await unbatched(N, 'read-back', true);

  const batch = await batched(8, 25);
  const base = await naive(N);
  const naivePer = base.requests / N;
  const naiveContent = base.content / N;
  const per = withLease.total.requests / N;
  const rows: BenchRow[] = [];
  const row = (
    name: string,
    savepoint: number,
    baseline: number,
    unit: string,
    target: string,
    met: boolean,
    lowerIsBetter = true,
  ): void => {
    rows.push({
      area: 'github',
      name,
      savepoint: `${fmt(savepoint)} ${unit}`,
      baseline: `${fmt(baseline)} ${unit}`,
      ratio: `${fmt(lowerIsBetter ? savepoint / baseline : savepoint / baseline)}× of naive`,
      target,
      met,
    });
  };
  row(
    'requests/checkpoint, unbatched, steady state (writer, 1 commit each, read-back verify)',
    readBack.steady.requests,
    naivePer,
    'req',
    '≤ 4',
    readBack.steady.requests <= 4,
  );
  // Informational: the first checkpoint pays for the head read, a directory listing, the run lock and recovery
  // (and, on this clock, a lease renewal at every checkpoint: see `unbatched`).
  row(`requests/checkpoint, unbatched, whole run of ${N} (cold head, run lock, recovery)`, per, naivePer, 'req', '—', true);
  rows.push({
    area: 'github',
    name: 'run lease renewal (every 10 s while a writer holds a run: a third of the 30 s lease)',
    savepoint: `${fmt(withLease.perRenewal)} req`,
    baseline: '— (the spec has no lease)',
    ratio: '—',
    target: '— (reported)',
    met: true,
  });
  row(
    'requests/checkpoint, unbatched, verify "sha" (no read-back)',
    shaOnly.steady.requests,
    naivePer,
    'req',
    '≤ 3 cached head',
    shaOnly.steady.requests <= 3,
  );
  row(
    'requests/checkpoint, batched (rate budget low, 200 checkpoints)',
    batch.steady.requests,
    naivePer,
    'req',
    '≤ 0.2',
    batch.steady.requests <= 0.2,
  );
  rows.push({
    area: 'github',
    name: 'commits for 200 checkpoints, batched (rate budget low)',
    savepoint: `${batch.commits} commits`,
    baseline: '200 commits (one per checkpoint)',
    ratio: `${fmt(batch.commits / 200)}× of unbatched`,
    target: '— (reported)',
    met: true,
  });
  row(
    'checkpoints per 5,000-request hour, unbatched',
    HOUR_BUDGET / readBack.steady.requests,
    HOUR_BUDGET / naivePer,
    'cp',
    '≥ 1,250',
    HOUR_BUDGET / readBack.steady.requests >= 1250,
    false,
  );
  row(
    'checkpoints per 5,000-request hour, batched',
    HOUR_BUDGET / batch.steady.requests,
    HOUR_BUDGET / naivePer,
    'cp',
    '≥ 25,000',
    HOUR_BUDGET / batch.steady.requests >= 25_000,
    false,
  );
  // GitHub's secondary limit: 500 content-generating requests per hour binds before 5,000.
  row(
    'checkpoints/hour under the 500 content-request limit, unbatched',
    CONTENT_PER_HOUR / readBack.steady.content,
    CONTENT_PER_HOUR / naiveContent,
    'cp',
    '—',
    true,
    false,
  );
  row(
    'checkpoints/hour under the 500 content-request limit, batched',
    CONTENT_PER_HOUR / batch.steady.content,
    CONTENT_PER_HOUR / naiveContent,
    'cp',
    '—',
    true,
    false,
  );
  return rows;
}
