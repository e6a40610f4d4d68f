import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isCheckpointError } from 'savepoint';
import {
  githubIssueCommentSink,
  linearStatusSink,
  runCheckpointProtocol,
  renderStatusComment,
  type CheckpointProtocolOptions,
  type StatusSink,
} from 'savepoint/progress-protocol';
import {
  GITHUB_TOKEN,
  LINEAR_KEY,
  githubSchemaErrors,
  manualClock,
  startFakeGitHub,
  startFakeLinear,
  type FakeTracker,
} from './helpers.js';

const COMMENTS = '/repos/{owner}/{repo}/issues/{issue_number}/comments';
const COMMENT = '/repos/{owner}/{repo}/issues/comments/{comment_id}';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'savepoint-sinks-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const progress = {
  issue: { id: 'CIA-123', title: 'Checkpoint protocol' },
  executionMode: 'tdd',
  completedTasks: ['Codec', 'Git step'],
  currentTask: { description: 'Tracker upsert', status: 'Linear passing' },
  remainingTasks: ['Stop hook'],
  decisions: [{ decision: 'Upsert one comment', rationale: 'no notification spam' }],
  blockers: [],
};
const clockAt = (iso: string) => ({ now: () => Date.parse(iso) });
const state = (): Record<string, unknown> => JSON.parse(readFileSync(join(dir, '.ccc-state.json'), 'utf8')) as Record<string, unknown>;
const run = (sink: StatusSink, extra: Partial<CheckpointProtocolOptions> = {}) =>
  runCheckpointProtocol({ cwd: dir, profile: 'automated', progress, sink, clock: clockAt('2025-12-14T15:30:00Z'), ...extra });

interface Case {
  readonly name: 'Linear' | 'GitHub';
  start(): Promise<FakeTracker>;
  sink(url: string, extra?: Record<string, unknown>): StatusSink;
  badSink(url: string): StatusSink;
  token: string;
}

const cases: Case[] = [
  {
    name: 'Linear',
    start: startFakeLinear,
    sink: (url, extra = {}) => linearStatusSink({ issueId: 'CIA-123', apiKey: LINEAR_KEY, endpoint: `${url}/graphql`, ...extra }),
    badSink: (url) => linearStatusSink({ issueId: 'CIA-123', apiKey: 'lin_api_WRONGSECRET', endpoint: `${url}/graphql` }),
    token: LINEAR_KEY,
  },
  {
    name: 'GitHub',
    start: () => startFakeGitHub('acme', 'app'),
    sink: (url, extra = {}) =>
      githubIssueCommentSink({ owner: 'acme', repo: 'app', issueNumber: 7, token: GITHUB_TOKEN, baseUrl: url, ...extra }),
    badSink: (url) => githubIssueCommentSink({ owner: 'acme', repo: 'app', issueNumber: 7, token: 'ghp_WRONGSECRET', baseUrl: url }),
    token: GITHUB_TOKEN,
  },
];

describe.each(cases)('$name status sink against a local server speaking its API', (c) => {
  let server: FakeTracker;
  beforeEach(async () => {
    server = await c.start();
  });
  afterEach(() => server.close());

  it('creates the Checkpoint Status comment once, stores its id, then updates it in place', async () => {
    writeFileSync(join(dir, '.ccc-state.json'), '{\n    "phase": "build",\n    "activeTaskFiles": ["src/a.ts"]\n}\n');
    const first = await run(c.sink(server.url));
    expect(first.summary).toBe('Checkpoint complete: 2/2 steps succeeded.');
    expect(server.comments.size).toBe(1);
    const [id, comment] = [...server.comments.entries()][0]!;
    expect(first.commentId).toBe(id);
    expect(comment.body).toBe(
      [
        '## Checkpoint Status',
        '',
        '**Updated:** 2025-12-14T15:30:00.000Z',
        '**Task:** 3 of 4 — Tracker upsert',
        '**Status:** In Progress',
        '',
        '**Decisions:** Upsert one comment (no notification spam)',
        '**Blockers:** None',
        '**Next:** Continue Tracker upsert (Linear passing)',
      ].join('\n'),
    );
    // the id is stored; the file's other fields, their order and its indentation are kept
    expect(readFileSync(join(dir, '.ccc-state.json'), 'utf8')).toBe(
      `{\n    "phase": "build",\n    "activeTaskFiles": [\n        "src/a.ts"\n    ],\n    "checkpointCommentId": "${id}"\n}\n`,
    );

    const second = await run(c.sink(server.url), {
      clock: clockAt('2025-12-14T16:00:00Z'),
      progress: {
        ...progress,
        decisions: [...progress.decisions, { decision: 'GitHub too', rationale: '' }],
        blockers: [{ description: 'Token', unblockedBy: 'admin' }],
      },
      nextAction: 'Write the GitHub sink tests',
    });
    expect(second.summary).toBe('Checkpoint complete: 2/2 steps succeeded.');
    expect(server.comments.size).toBe(1); // updated in place, not created fresh
    expect(second.commentId).toBe(id);
    const body = server.comments.get(id)!.body;
    expect(body).toContain('**Updated:** 2025-12-14T16:00:00.000Z');
    expect(body).toContain('**Status:** Blocked');
    expect(body).toContain('**Decisions:** GitHub too'); // only those since the last checkpoint
    expect(body).toContain('**Blockers:** Token (unblocked by: admin)');
    expect(body).toContain('**Next:** Write the GitHub sink tests');
    expect(state().checkpointCommentId).toBe(id);
    expect(server.requests).toHaveLength(2);
  });

  it('re-creates the comment when the stored one was deleted, and stores the new id', async () => {
    writeFileSync(
      join(dir, '.ccc-state.json'),
      JSON.stringify({ checkpointCommentId: c.name === 'GitHub' ? '999' : '00000000-0000-4000-8000-000000000000' }),
    );
    const report = await run(c.sink(server.url));
    expect(report.summary).toBe('Checkpoint complete: 2/2 steps succeeded.');
    expect(server.requests).toHaveLength(2);
    expect(server.comments.size).toBe(1);
    expect(state().checkpointCommentId).toBe([...server.comments.keys()][0]);
  });

  it('HTTP 503: warning, skip, and the exact report line', async () => {
    server.fail({ status: 503 });
    const report = await run(c.sink(server.url));
    expect(report.summary).toBe(
      `Checkpoint complete: 1/2 steps succeeded.\nFailed: ${c.name} update (HTTP 503) — status not persisted to issue tracker.`,
    );
    expect(report.output).toContain(`Warning: ${c.name} update skipped (HTTP 503).`);
    expect(report.steps[0]!.outcome).toBe('succeeded'); // step 1 still persisted
    expect(report.steps[2]!.error?.reasonCode).toBe('checkpoint_tracker_unavailable');
    expect(server.comments.size).toBe(0);
  });

  it('a timeout (manual clock) fails the step without waiting for real time', async () => {
    server.fail('hang');
    const clock = manualClock();
    const pending = run(c.sink(server.url, { clock, timeoutMs: 5000 }));
    await server.nextRequest();
    await new Promise((r) => setTimeout(r, 20));
    await clock.advance(5000);
    const report = await pending;
    expect(report.summary).toBe(
      `Checkpoint complete: 1/2 steps succeeded.\nFailed: ${c.name} update (timeout after 5000 ms) — status not persisted to issue tracker.`,
    );
    expect(clock.pending).toBe(0);
  });

  it('429 is reported as a rate limit; an unreachable server as a network error', async () => {
    server.fail({ status: 429 });
    const limited = await run(c.sink(server.url));
    expect(limited.steps[2]).toMatchObject({ outcome: 'failed', cause: 'HTTP 429, rate limited' });
    expect(limited.steps[2]!.error?.reasonCode).toBe('checkpoint_rate_limited');
    await server.close();
    const down = await run(c.sink(server.url));
    expect(down.steps[2]!.cause).toMatch(/^network error/);
  });

  it('a rejected token fails the step, and no token ever reaches the output or the error', async () => {
    const report = await run(c.badSink(server.url));
    expect(report.steps[2]!.outcome).toBe('failed');
    expect(report.steps[2]!.cause).toMatch(c.name === 'GitHub' ? /^HTTP 401$/ : /^HTTP 400, AUTHENTICATION_ERROR$/);
    const ok = await run(c.sink(server.url));
    for (const text of [
      report.output,
      JSON.stringify(report.steps),
      ok.output,
      JSON.stringify(ok.steps),
      String(report.steps[2]!.error?.message),
    ]) {
      expect(text).not.toContain(c.token);
      expect(text).not.toContain('WRONGSECRET');
    }
  });
});

describe('request and response shapes', () => {
  it('Linear: commentCreate / commentUpdate with the documented variables and a raw API key', async () => {
    const server = await startFakeLinear();
    try {
      const sink = linearStatusSink({ issueId: 'CIA-123', apiKey: LINEAR_KEY, endpoint: `${server.url}/graphql` });
      const id = await sink.createComment('first');
      expect(await sink.updateComment(id, 'second')).toBe(true);
      const [create, update] = server.requests;
      expect(create!.headers.authorization).toBe(LINEAR_KEY);
      expect(create!.body).toMatchObject({
        query: expect.stringContaining('commentCreate(input: $input)'),
        variables: { input: { issueId: 'CIA-123', body: 'first' } },
      });
      expect(update!.body).toMatchObject({
        query: expect.stringContaining('commentUpdate(id: $id, input: $input)'),
        variables: { id, input: { body: 'second' } },
      });
      expect(server.comments.get(id)).toEqual({ body: 'second', issue: 'CIA-123' });
      const oauth = linearStatusSink({ issueId: 'CIA-123', apiKey: 'tok', tokenType: 'oauth', endpoint: `${server.url}/graphql` });
      await oauth.createComment('x').catch(() => undefined);
      expect(server.requests.at(-1)!.headers.authorization).toBe('Bearer tok');
    } finally {
      await server.close();
    }
  });

  it("GitHub: requests and the fake's responses match GitHub's OpenAPI description", async () => {
    const server = await startFakeGitHub('acme', 'app');
    try {
      const sink = githubIssueCommentSink({ owner: 'acme', repo: 'app', issueNumber: 7, token: GITHUB_TOKEN, baseUrl: server.url });
      const id = await sink.createComment('first');
      expect(id).toMatch(/^\d+$/);
      expect(await sink.updateComment(id, 'second')).toBe(true);
      expect(await sink.updateComment('12345', 'gone')).toBe(false);
      expect(await sink.updateComment('not-a-number', 'x')).toBe(false);
      const [create, update] = server.requests;
      expect(create).toMatchObject({ method: 'POST', path: '/repos/acme/app/issues/7/comments' });
      expect(update).toMatchObject({ method: 'PATCH', path: `/repos/acme/app/issues/comments/${id}` });
      expect(create!.headers).toMatchObject({
        authorization: `Bearer ${GITHUB_TOKEN}`,
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
      });
      expect(githubSchemaErrors(COMMENTS, 'post', 'request', create!.body)).toEqual([]);
      expect(githubSchemaErrors(COMMENT, 'patch', 'request', update!.body)).toEqual([]);
      // the fake answers with what GitHub documents
      const created = await fetch(`${server.url}/repos/acme/app/issues/7/comments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${GITHUB_TOKEN}`, 'user-agent': 't' },
        body: JSON.stringify({ body: 'x' }),
      });
      expect(created.status).toBe(201);
      const createdBody = (await created.json()) as { id: number };
      expect(githubSchemaErrors(COMMENTS, 'post', 201, createdBody)).toEqual([]);
      const patched = await fetch(`${server.url}/repos/acme/app/issues/comments/${createdBody.id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${GITHUB_TOKEN}`, 'user-agent': 't' },
        body: JSON.stringify({ body: 'y' }),
      });
      expect(githubSchemaErrors(COMMENT, 'patch', 200, await patched.json())).toEqual([]);
      expect(githubSchemaErrors(COMMENTS, 'post', 'request', { nobody: 1 })).not.toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('sinks refuse incomplete configuration with checkpoint_config_invalid', () => {
    expect(() => linearStatusSink({ issueId: '', apiKey: 'k' })).toThrow(/checkpoint_config_invalid/);
    expect(() => githubIssueCommentSink({ owner: 'a/b', repo: 'r', issueNumber: 1, token: 't' })).toThrow(/checkpoint_config_invalid/);
    expect(() => githubIssueCommentSink({ owner: 'a', repo: 'r', issueNumber: 0, token: 't' })).toThrow(/checkpoint_config_invalid/);
    let err: unknown;
    try {
      linearStatusSink({ issueId: 'x', apiKey: '' });
    } catch (e) {
      err = e;
    }
    expect(isCheckpointError(err, 'checkpoint_config_invalid')).toBe(true);
  });

  it('renders the status comment exactly in the spec format', () => {
    expect(
      renderStatusComment({
        updated: '2025-12-14T15:30:00Z',
        taskNumber: 2,
        taskCount: 5,
        task: 'Scoring',
        status: 'resuming',
        decisions: '',
        blockers: '',
        next: 'Write\ntests',
      }),
    ).toBe(
      '## Checkpoint Status\n\n**Updated:** 2025-12-14T15:30:00Z\n**Task:** 2 of 5 — Scoring\n**Status:** Resuming\n\n**Decisions:** None\n**Blockers:** None\n**Next:** Write tests',
    );
  });
});
