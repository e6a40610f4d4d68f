/* eslint-disable @typescript-eslint/no-explicit-any -- the API answers are JSON, checked by value below */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, defineProfile, keepLast, systemClock } from 'savepoint';
import { githubStorage } from 'savepoint/github';
import { initialPhasedPayload, phasedWorkflow } from 'savepoint/phased-workflow';
import { startGitHubEmulator } from 'savepoint/testing';
import { fsStorage } from 'savepoint/fs';
import { startUiServer, UI_CSP, type UiServer } from '../../src/ui/server.js';
import { buildViewerStore } from './store.js';

/** A raw request, so the Host header and the path are exactly what a hostile client sends. */
function raw(
  port: number,
  path: string,
  options: { method?: string; host?: string; body?: string; type?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { host: options.host ?? `127.0.0.1:${port}`, ...(options.type ? { 'content-type': options.type } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('savepoint ui server', () => {
  let store: Awaited<ReturnType<typeof buildViewerStore>>;
  let ui: UiServer;
  let token = '';
  const api = async (path: string): Promise<{ status: number; json: any }> => {
    const r = await raw(ui.port, `/${token}/api/${path}`);
    return { status: r.status, json: JSON.parse(r.body) };
  };

  beforeAll(async () => {
    store = await buildViewerStore();
    ui = await startUiServer({
      storage: fsStorage({ dir: store.dir, create: false, cleanupOnOpen: false }),
      profile: defaultProfile,
      clock: systemClock,
    });
    token = new URL(ui.url).pathname.split('/')[1]!;
  });
  afterAll(async () => {
    await ui.close();
    await store.close();
  });

  it('binds 127.0.0.1 with a long random token in the URL', () => {
    expect(ui.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{43}\/$/);
  });

  it('answers nothing without the token, with a wrong one, or for another Host', async () => {
    expect((await raw(ui.port, '/')).status).toBe(404);
    expect((await raw(ui.port, '/api/runs')).status).toBe(404);
    expect((await raw(ui.port, `/${token.slice(0, -1)}x/api/runs`)).status).toBe(404);
    expect((await raw(ui.port, `/${token}`)).status).toBe(404);
    const rebound = await raw(ui.port, `/${token}/api/runs`, { host: 'evil.example:80' });
    expect(rebound.status).toBe(421);
    expect(rebound.body).not.toContain('agent-idle');
  });

  it('serves the page with a strict CSP and no inline code', async () => {
    const page = await raw(ui.port, `/${token}/`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toBe(UI_CSP);
    expect(UI_CSP).not.toMatch(/unsafe-(inline|eval)/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).not.toMatch(/<script>(?!<)|<script [^>]*>[^<]/);
    expect(page.body).not.toMatch(/style=/);
    for (const asset of ['app.js', 'app.css']) expect((await raw(ui.port, `/${token}/${asset}`)).status).toBe(200);
  });

  it('lists runs with status, activity, size, lock holder and resumability', async () => {
    const { status, json } = await api('runs');
    expect(status).toBe(200);
    const byId = Object.fromEntries((json as { runId: string }[]).map((r) => [r.runId, r])) as Record<string, any>;
    expect(Object.keys(byId).sort()).toEqual(['agent-damaged', 'agent-idle', 'agent-live', 'build-finished']);
    expect(byId['build-finished'].resumable).toEqual({ state: 'finished', status: 'completed', sequence: 3 });
    expect(byId['agent-idle'].resumable).toMatchObject({ state: 'resumable', sequence: 4 });
    expect(byId['agent-idle'].bytes).toBeGreaterThan(0);
    expect(byId['agent-live'].lock).toMatchObject({ pid: process.pid, live: true });
    expect(byId['build-finished'].lock).toBeNull();
  });

  it("gives a run's timeline with triggers, heartbeats and the unreadable file's reason", async () => {
    const idle = (await api('runs/agent-idle/timeline')).json.snapshots as any[];
    expect(idle.map((s) => [s.sequence, s.source, s.heartbeat ?? false])).toEqual([
      [1, 'step_boundary', false],
      [2, 'timer', true],
      [3, 'timer', true],
      [4, 'step_boundary', false],
    ]);
    const damaged = (await api('runs/agent-damaged/timeline')).json.snapshots as any[];
    expect(damaged.find((s) => s.error)).toMatchObject({
      key: expect.stringMatching(/^checkpoints\/agent-damaged\/history\//),
      error: { reasonCode: 'checkpoint_schema_invalid' },
    });
  });

  it('answers a quick timeline from the listing, complete once the files were read', async () => {
    const first = await ui.close().then(async () => {
      ui = await startUiServer({
        storage: fsStorage({ dir: store.dir, create: false, cleanupOnOpen: false }),
        profile: defaultProfile,
        clock: systemClock,
      });
      token = new URL(ui.url).pathname.split('/')[1]!;
      return (await api('runs/agent-idle/timeline?quick=1')).json;
    });
    // A new server has read nothing: the listing gives ids and the times their names carry.
    expect(first.complete).toBe(false);
    expect(first.snapshots).toHaveLength(4);
    expect(first.snapshots.every((s: any) => s.pending === true && /^2026-11-20T/.test(s.createdAt))).toBe(true);
    await api('runs/agent-idle/timeline');
    const second = (await api('runs/agent-idle/timeline?quick=1')).json;
    expect(second.complete).toBe(true);
    expect(second.snapshots.map((s: any) => s.sequence)).toEqual([1, 2, 3, 4]);
  });

  it('shows a snapshot and diffs two', async () => {
    const snap = (await api('runs/agent-idle/snapshots/4')).json;
    expect(snap.payload).toEqual({ step: 2, notes: 'resumed', extra: { nested: [1, 2] } });
    const diff = (await api('runs/agent-idle/diff?a=1&b=4')).json;
    const paths = Object.fromEntries((diff.changes as any[]).map((c) => [c.path, c.kind]));
    expect(paths).toEqual({
      '/payload/step': 'changed',
      '/payload/notes': 'changed',
      '/payload/extra': 'added',
    });
    // The envelope's changes come apart, for the page to show on demand.
    expect(Object.fromEntries((diff.envelope as any[]).map((c) => [c.path, c.kind]))).toMatchObject({ '/sequence': 'changed' });
  });

  it('verifies a run and plans its resume, with reason codes', async () => {
    const verify = (await api('runs/agent-damaged/verify')).json;
    expect(verify.problems.map((p: any) => p.reasonCode)).toContain('checkpoint_schema_invalid');
    expect((await api('runs/build-finished/verify')).json.problems).toEqual([]);
    const resume = (await api('runs/agent-damaged/resume')).json;
    // latest.json is sound: the run resumes from #2 although its history copy is damaged.
    expect(resume).toMatchObject({ ok: true, sequence: 2, status: 'in_progress' });
  });

  it('plans retention with a digest, and refuses to apply when read-only', async () => {
    const plan = (await api('retention?run=agent-idle')).json;
    expect(plan.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(plan.decisions.map((d: any) => d.sequence).sort()).toEqual([1, 2, 3, 4]);
    const apply = await raw(ui.port, `/${token}/api/retention/apply`, {
      method: 'POST',
      type: 'application/json',
      body: JSON.stringify({ digest: plan.digest, confirm: true }),
    });
    expect(apply.status).toBe(403);
    expect(JSON.parse(apply.body).error.reasonCode).toBe('ui_read_only');
  });

  it('validates run ids and refs like every other entry (no traversal)', async () => {
    for (const bad of ['..', '%2E%2E', '..%2Fetc', 'a%2Fb', '%00']) {
      const r = await raw(ui.port, `/${token}/api/runs/${bad}/timeline`);
      expect([400, 404]).toContain(r.status);
      expect(r.body).not.toMatch(/root:|passwd/);
    }
    expect((await api('runs/nope/timeline')).status).toBe(404);
    expect((await api('runs/agent-idle/snapshots/999')).status).toBe(404);
    expect((await raw(ui.port, `/${token}/api/runs`, { method: 'DELETE' })).status).toBe(405);
  });
});

describe('savepoint ui server with --allow-prune', () => {
  it('applies only the confirmed plan it showed, as JSON, and refuses a stale one', async () => {
    const store = await buildViewerStore();
    const storage = fsStorage({ dir: store.dir, create: false, cleanupOnOpen: false });
    const profile = defineProfile({ ...defaultProfile, retention: { name: 'keep-one', rules: [keepLast(1)] } });
    const ui = await startUiServer({ storage, profile, clock: systemClock, allowPrune: true });
    const base = new URL(ui.url).pathname;
    const post = (body: unknown, type = 'application/json') =>
      raw(ui.port, `${base}api/retention/apply`, { method: 'POST', type, body: JSON.stringify(body) });
    try {
      const plan = JSON.parse((await raw(ui.port, `${base}api/retention?run=build-finished`)).body);
      expect(plan.decisions.filter((d: any) => d.action === 'delete')).toHaveLength(2);
      expect((await post({ digest: plan.digest, confirm: true }, 'text/plain')).status).toBe(415);
      expect((await post({ digest: plan.digest })).status).toBe(400);
      const stale = await post({ digest: '0'.repeat(64), confirm: true });
      expect(stale.status).toBe(409);
      expect(JSON.parse(stale.body).error.reasonCode).toBe('ui_plan_changed');
      const applied = await post({ digest: plan.digest, confirm: true });
      expect(applied.status).toBe(200);
      expect(JSON.parse(applied.body).applied).toBe(plan.operations);
      // The store changed: the same digest is now stale.
      expect((await post({ digest: plan.digest, confirm: true })).status).toBe(409);
    } finally {
      await ui.close();
      await storage.close();
      await store.close();
    }
  });
});

describe('savepoint ui reads a file once', () => {
  it('reads only new or changed files on a second timeline, and one file per snapshot view', async () => {
    const store = await buildViewerStore();
    const inner = fsStorage({ dir: store.dir, create: false, cleanupOnOpen: false });
    const gets: string[] = [];
    const counting = Object.assign(Object.create(inner) as typeof inner, { get: (key: string) => (gets.push(key), inner.get(key)) });
    const ui = await startUiServer({ storage: counting, profile: defaultProfile, clock: systemClock });
    const base = new URL(ui.url).pathname;
    const get = async (p: string) => JSON.parse((await raw(ui.port, `${base}api/${p}`)).body);
    try {
      expect((await get('runs/agent-idle/timeline')).snapshots).toHaveLength(4);
      expect(gets.filter((k) => k.includes('/history/'))).toHaveLength(4);
      gets.length = 0;
      expect((await get('runs/agent-idle/timeline')).snapshots.map((s: any) => s.sequence)).toEqual([1, 2, 3, 4]);
      expect(gets).toEqual([]);
      expect((await get('runs/agent-idle/snapshots/2')).sequence).toBe(2);
      expect(gets).toHaveLength(1);
    } finally {
      await ui.close();
      await inner.close();
      await store.close();
    }
  });
});

describe('savepoint ui over other stores and profiles', () => {
  it('shows a phased-workflow run kept on GitHub (the emulator), with its trigger priorities and resume point', async () => {
    const TOKEN = 'ghp_uitest00000000000000000000000000000000';
    const gh = await startGitHubEmulator({ owner: 'acme', repo: 'checkpoints', token: TOKEN, secondaryLimit: false });
    const storage = githubStorage({
      owner: 'acme',
      repo: 'checkpoints',
      token: TOKEN,
      baseUrl: gh.url,
      emergencyQueue: 'memory',
      minWriteIntervalMs: 0,
    });
    const runId = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false });
    const empty = initialPhasedPayload('phase_0_intake', '2026-11-22T00:00:00Z');
    const r = await writer.checkpoint({
      source: 'phase_complete',
      status: 'in_progress',
      payload: {
        ...empty,
        state_snapshot: { ...empty.state_snapshot, phase_outputs: { ...empty.state_snapshot.phase_outputs, phase_0: { ok: true } } },
      },
    });
    expect(r.ok).toBe(true);
    await writer.close();
    const ui = await startUiServer({ storage, profile: phasedWorkflow, clock: systemClock, storeLabel: 'github acme/checkpoints' });
    const base = new URL(ui.url).pathname;
    try {
      const body = (await raw(ui.port, `${base}api/info`)).body;
      expect(body).not.toContain(TOKEN);
      const runs = JSON.parse((await raw(ui.port, `${base}api/runs`)).body);
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ runId, status: 'in_progress', resumable: { state: 'resumable', sequence: 1 } });
      const timeline = JSON.parse((await raw(ui.port, `${base}api/runs/${runId}/timeline`)).body);
      expect(timeline.snapshots.map((s: any) => [s.sequence, s.source])).toEqual([[1, 'phase_complete']]);
      const resume = JSON.parse((await raw(ui.port, `${base}api/runs/${runId}/resume`)).body);
      expect(resume.ok).toBe(true);
      expect(JSON.stringify([runs, timeline, resume])).not.toContain(TOKEN);
    } finally {
      await ui.close();
      await storage.close();
      await gh.close();
    }
  });
});
