import { afterEach, describe, expect, it } from 'vitest';
import {
  startGitHubEmulator,
  validateGitHubResponseBody,
  validateGitHubRequestBody,
  GITHUB_SCHEMA_SOURCE,
  type GitHubEmulator,
  type GitHubOperationId,
} from 'savepoint/testing';
import { TOKEN, virtualClock } from '../../support/github.js';

// The emulator answers as GitHub does; these tests speak raw HTTP to it.
const open: GitHubEmulator[] = [];
afterEach(async () => {
  for (const gh of open.splice(0)) await gh.close();
});

async function start(options: Parameters<typeof startGitHubEmulator>[0] = {}): Promise<GitHubEmulator> {
  const gh = await startGitHubEmulator({ token: TOKEN, ...options });
  open.push(gh);
  return gh;
}

function client(gh: GitHubEmulator, token = TOKEN) {
  const base = `${gh.url}/repos/${gh.owner}/${gh.repo}`;
  return async (method: string, path: string, body?: unknown, accept = 'application/vnd.github+json') => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, accept, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const raw = new Uint8Array(await res.arrayBuffer());
    const json =
      res.headers.get('content-type')?.includes('json') && raw.length > 0 ? JSON.parse(new TextDecoder().decode(raw)) : undefined;
    return { status: res.status, headers: res.headers, json, raw };
  };
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('contents API semantics', () => {
  it('201 for a new path, 422 when an update has no sha, 409 on a wrong sha, 200 with the right one, 201 for a new path even with a sha', async () => {
    const gh = await start();
    const call = client(gh);
    const created = await call('PUT', '/contents/a/x.json', { message: 'm', content: b64('one') });
    expect(created.status).toBe(201);
    const sha = created.json.content.sha;
    const noSha = await call('PUT', '/contents/a/x.json', { message: 'm', content: b64('two') });
    expect(noSha.status).toBe(422);
    expect(noSha.json.message).toBe('Invalid request.\n\n"sha" wasn\'t supplied.');
    const wrong = await call('PUT', '/contents/a/x.json', { message: 'm', content: b64('two'), sha: 'deadbeef' });
    expect(wrong.status).toBe(409);
    expect(wrong.json.message).toBe('a/x.json does not match deadbeef');
    const right = await call('PUT', '/contents/a/x.json', { message: 'm', content: b64('two'), sha });
    expect(right.status).toBe(200);
    const ghost = await call('PUT', '/contents/a/new.json', { message: 'm', content: b64('n'), sha });
    expect(ghost.status).toBe(201);
  });

  it('deletes with the blob sha: 409 on a wrong one, 404 when missing', async () => {
    const gh = await start();
    const call = client(gh);
    const sha = (await call('PUT', '/contents/d.txt', { message: 'm', content: b64('d') })).json.content.sha;
    expect((await call('DELETE', '/contents/d.txt', { message: 'm', sha: '0'.repeat(40) })).status).toBe(409);
    expect((await call('DELETE', '/contents/d.txt', { message: 'm', sha })).status).toBe(200);
    expect((await call('DELETE', '/contents/d.txt', { message: 'm', sha })).status).toBe(404);
  });

  it('files over 1 MB: 403 too_large by default, empty content with the object media type, bytes with raw', async () => {
    const gh = await start();
    const big = new Uint8Array(1024 * 1024 + 10).fill(65);
    gh.state.commitFiles({ 'big.bin': big });
    const call = client(gh);
    const plain = await call('GET', '/contents/big.bin');
    expect(plain.status).toBe(403);
    expect(plain.json.errors[0].code).toBe('too_large');
    const object = await call('GET', '/contents/big.bin', undefined, 'application/vnd.github.object+json');
    expect(object.json).toMatchObject({ encoding: 'none', content: '' });
    const raw = await call('GET', `/git/blobs/${object.json.sha}`, undefined, 'application/vnd.github.raw+json');
    expect(raw.raw.length).toBe(big.length);
  });

  it('wraps base64 at 60 characters, as GitHub does', async () => {
    const gh = await start();
    gh.state.commitFiles({ 'w.txt': 'x'.repeat(200) });
    const res = await client(gh)('GET', '/contents/w.txt');
    expect(res.json.content.split('\n')[0]).toHaveLength(60);
  });

  it('limits contents directory listings to 1,000 entries', async () => {
    const gh = await start({ contentsDirectoryLimit: 5 });
    gh.state.commitFiles(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`dir/f${i}`, String(i)])));
    const res = await client(gh)('GET', '/contents/dir');
    expect(res.json).toHaveLength(5);
  });
});

describe('git data API semantics', () => {
  it('409 "Git Repository is empty." on an empty repository, until the contents API makes the first commit', async () => {
    const gh = await start({ empty: true });
    const call = client(gh);
    for (const [m, p, body] of [
      ['GET', '/git/ref/heads/main', undefined],
      ['POST', '/git/trees', { tree: [{ path: 'a', mode: '100644', type: 'blob', content: 'a' }] }],
      ['POST', '/git/blobs', { content: 'a' }],
      ['GET', '/commits/heads/main', undefined],
    ] as const) {
      const res = await call(m, p, body);
      expect(res.status).toBe(409);
      expect(res.json.message).toBe('Git Repository is empty.');
    }
    expect((await call('GET', '/contents/x')).json.message).toBe('This repository is empty.');
    expect((await call('PUT', '/contents/first.txt', { message: 'm', content: b64('1'), branch: 'main' })).status).toBe(201);
    expect((await call('GET', '/git/ref/heads/main')).status).toBe(200);
  });

  it('tree with base_tree and inline content, commit, fast-forward ref update; 422 when not a fast forward', async () => {
    const gh = await start();
    const call = client(gh);
    const head = (await call('GET', '/commits/heads/main')).json;
    const tree = await call('POST', '/git/trees', {
      base_tree: head.commit.tree.sha,
      tree: [{ path: 'cp/a.json', mode: '100644', type: 'blob', content: '{}' }],
    });
    expect(tree.status).toBe(201);
    const commit = await call('POST', '/git/commits', { message: 'c', tree: tree.json.sha, parents: [head.sha] });
    expect(commit.status).toBe(201);
    // Another writer moves the branch first.
    gh.state.commitFiles({ 'other.txt': 'o' });
    const nff = await call('PATCH', '/git/refs/heads/main', { sha: commit.json.sha, force: false });
    expect(nff.status).toBe(422);
    expect(nff.json.message).toBe('Update is not a fast forward');
    const head2 = (await call('GET', '/commits/heads/main')).json;
    const tree2 = await call('POST', '/git/trees', {
      base_tree: head2.commit.tree.sha,
      tree: [{ path: 'cp/a.json', mode: '100644', type: 'blob', content: '{}' }],
    });
    const commit2 = await call('POST', '/git/commits', { message: 'c', tree: tree2.json.sha, parents: [head2.sha] });
    expect((await call('PATCH', '/git/refs/heads/main', { sha: commit2.json.sha, force: false })).status).toBe(200);
    expect(new TextDecoder().decode(gh.state.readFile('cp/a.json'))).toBe('{}');
    expect(gh.state.readFile('other.txt')).toBeDefined();
  });

  it('recursive trees are truncated over the entry limit', async () => {
    const gh = await start({ treeEntryLimit: 3 });
    gh.state.commitFiles({ 'a/1': '1', 'a/2': '2', 'b/3': '3' });
    const res = await client(gh)('GET', '/git/trees/main?recursive=1');
    expect(res.json.truncated).toBe(true);
    expect(res.json.tree).toHaveLength(3);
  });

  it('commit diffs list changed files with blob shas, paginated', async () => {
    const gh = await start({ commitFilesPerPage: 2 });
    const sha = gh.state.commitFiles({ 'x/1': '1', 'x/2': '2', 'x/3': '3' });
    const call = client(gh);
    const p1 = await call('GET', `/commits/${sha}?per_page=2&page=1`);
    expect(p1.json.files).toHaveLength(2);
    expect(p1.headers.get('link')).toContain('page=2');
    const p2 = await call('GET', `/commits/${sha}?per_page=2&page=2`);
    expect(p2.json.files.map((f: { filename: string }) => f.filename)).toEqual(['x/3']);
  });
});

describe('auth and rate limits', () => {
  it('401 Bad credentials for another token; the budget is not spent', async () => {
    const gh = await start();
    const res = await client(gh, 'ghp_wrong')('GET', '/git/ref/heads/main');
    expect(res.status).toBe(401);
    expect(res.json.message).toBe('Bad credentials');
    expect(gh.rateLimit.remaining).toBe(5000);
  });

  it('sends x-ratelimit headers from the configured budget and refuses with 403 when it is spent, until the window resets', async () => {
    const clock = virtualClock();
    const gh = await start({ clock, rateLimit: { limit: 3, windowMs: 60_000 } });
    const call = client(gh);
    const first = await call('GET', '/git/ref/heads/main');
    expect(first.headers.get('x-ratelimit-limit')).toBe('3');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(Number(first.headers.get('x-ratelimit-reset')) * 1000).toBeGreaterThanOrEqual(clock.now() + 59_000);
    await call('GET', '/git/ref/heads/main');
    await call('GET', '/git/ref/heads/main');
    const refused = await call('GET', '/git/ref/heads/main');
    expect(refused.status).toBe(403);
    expect(refused.json.message).toMatch(/^API rate limit exceeded/);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    await clock.advance(60_000);
    expect((await call('GET', '/git/ref/heads/main')).status).toBe(200);
  });

  it('enforces GitHub’s content-creation limit (80 per minute) as a secondary limit', async () => {
    const clock = virtualClock();
    const gh = await start({ clock, secondaryLimit: { perMinute: 3, perHour: 100 } });
    const call = client(gh);
    for (let i = 0; i < 3; i++) expect((await call('POST', '/git/blobs', { content: `b${i}` })).status).toBe(201);
    const refused = await call('POST', '/git/blobs', { content: 'b3' });
    expect(refused.status).toBe(403);
    expect(refused.json.message).toMatch(/secondary rate limit/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    await clock.advance(61_000);
    expect((await call('POST', '/git/blobs', { content: 'b4' })).status).toBe(201);
  });
});

describe('faults', () => {
  it('primary and secondary limits, with and without retry-after, 403 or 429', async () => {
    const gh = await start();
    const call = client(gh);
    gh.faults.add({ fault: { kind: 'secondary-rate-limit', status: 429, retryAfterSec: 7 } });
    const s = await call('GET', '/git/ref/heads/main');
    expect([s.status, s.headers.get('retry-after')]).toEqual([429, '7']);
    gh.faults.add({ fault: { kind: 'secondary-rate-limit' } });
    const s2 = await call('GET', '/git/ref/heads/main');
    expect([s2.status, s2.headers.get('retry-after')]).toEqual([403, null]);
    gh.faults.add({ fault: { kind: 'primary-rate-limit', status: 429 } });
    const p = await call('GET', '/git/ref/heads/main');
    expect([p.status, p.headers.get('x-ratelimit-remaining')]).toEqual([429, '0']);
  });

  it('a moved head, a landed 502, a dropped connection, a stale read, a corrupt write', async () => {
    const gh = await start();
    const call = client(gh);
    const before = gh.state.head();
    gh.faults.add({ operation: 'git/get-ref', fault: { kind: 'move-head' } });
    const ref = await call('GET', '/git/ref/heads/main');
    expect(ref.json.object.sha).not.toBe(before);

    gh.faults.add({ operation: 'repos/create-or-update-file-contents', fault: { kind: 'status', status: 502, landed: true } });
    expect((await call('PUT', '/contents/landed.txt', { message: 'm', content: b64('x') })).status).toBe(502);
    expect(gh.state.readFile('landed.txt')).toBeDefined();

    gh.faults.add({ operation: 'repos/create-or-update-file-contents', fault: { kind: 'network-error', landed: true } });
    await expect(call('PUT', '/contents/dropped.txt', { message: 'm', content: b64('x') })).rejects.toThrow();
    expect(gh.state.readFile('dropped.txt')).toBeDefined();

    gh.faults.add({ operation: 'repos/get-content', fault: { kind: 'stale-read' } });
    expect((await call('GET', '/contents/dropped.txt')).status).toBe(404);
    expect((await call('GET', '/contents/dropped.txt')).status).toBe(200);

    gh.faults.add({ operation: 'repos/create-or-update-file-contents', fault: { kind: 'corrupt-write' } });
    const put = await call('PUT', '/contents/c.txt', { message: 'm', content: b64('abc') });
    expect(new TextDecoder().decode(gh.state.readFile('c.txt'))).not.toBe('abc');
    expect(put.json.content.sha).not.toBe('f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f');
  });

  it('slow responses answer late in real time', async () => {
    const gh = await start();
    gh.faults.add({ fault: { kind: 'delay', ms: 150 } });
    const t = performance.now();
    await client(gh)('GET', '/git/ref/heads/main');
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
  });

  it('skip and times select which requests fault', async () => {
    const gh = await start();
    const call = client(gh);
    const h = gh.faults.add({ operation: 'git/get-ref', skip: 1, times: 2, fault: { kind: 'status', status: 503 } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await call('GET', '/git/ref/heads/main')).status);
    expect(statuses).toEqual([200, 503, 503, 200]);
    expect(h.fired).toBe(2);
  });
});

describe('schemas from GitHub’s OpenAPI description', () => {
  it('records the source package version', () => {
    expect(GITHUB_SCHEMA_SOURCE.package).toBe('@octokit/openapi');
    expect(GITHUB_SCHEMA_SOURCE.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('every response of a full session validates against the pinned schemas, and the validator rejects a broken body', async () => {
    const gh = await start({ commitFilesPerPage: 2 });
    const call = client(gh);
    // Touch every operation and every status the adapter relies on.
    const put = await call('PUT', '/contents/s/a.json', { message: 'm', content: b64('{}') });
    await call('PUT', '/contents/s/a.json', { message: 'm', content: b64('{}') });
    await call('PUT', '/contents/s/a.json', { message: 'm', content: b64('{}'), sha: 'bad' });
    await call('GET', '/contents/s/a.json');
    await call('GET', '/contents/s', undefined, 'application/vnd.github.object+json');
    await call('GET', '/contents/s');
    await call('GET', '/contents/nope');
    const head = (await call('GET', '/commits/heads/main?per_page=1')).json;
    const blob = await call('POST', '/git/blobs', { content: b64('bin'), encoding: 'base64' });
    await call('GET', `/git/blobs/${blob.json.sha}`);
    const tree = await call('POST', '/git/trees', {
      base_tree: head.commit.tree.sha,
      tree: [
        { path: 's/b.bin', mode: '100644', type: 'blob', sha: blob.json.sha },
        { path: 's/a.json', mode: '100644', type: 'blob', sha: null },
      ],
    });
    const commit = await call('POST', '/git/commits', { message: 'c', tree: tree.json.sha, parents: [head.sha] });
    await call('GET', '/git/ref/heads/main');
    await call('PATCH', '/git/refs/heads/main', { sha: commit.json.sha, force: false });
    await call('PATCH', '/git/refs/heads/main', { sha: head.sha, force: false });
    await call('GET', `/commits/${commit.json.sha}?per_page=2`);
    await call('GET', '/git/trees/main?recursive=1');
    await call('DELETE', '/contents/s/b.bin', { message: 'm', sha: blob.json.sha });
    gh.faults.add({ fault: { kind: 'primary-rate-limit' } });
    await call('GET', '/git/ref/heads/main');
    expect(put.status).toBe(201);
    expect(gh.requestLog.length).toBeGreaterThan(15);
    expect(gh.schemaViolations).toEqual([]);
    for (const r of gh.requestLog) {
      if (r.operation === 'unknown' || r.responseBody === undefined) continue;
      expect(
        validateGitHubResponseBody(r.operation as GitHubOperationId, r.status, r.mediaType ?? 'application/json', r.responseBody),
      ).toEqual([]);
      if (r.requestBody !== undefined) expect(validateGitHubRequestBody(r.operation as GitHubOperationId, r.requestBody)).toEqual([]);
    }
    // The check can fail: a body missing required fields is reported.
    expect(validateGitHubResponseBody('git/get-ref', 200, 'application/json', { ref: 'refs/heads/main' })).not.toEqual([]);
    expect(validateGitHubRequestBody('git/update-ref', { force: false })).not.toEqual([]);
  });

  it('answers a request body that breaks the schema with 422 and records it', async () => {
    const gh = await start();
    const res = await client(gh)('PATCH', '/git/refs/heads/main', { force: 'yes' });
    expect(res.status).toBe(422);
    expect(gh.schemaViolations).toHaveLength(1);
    expect(gh.schemaViolations[0]!.direction).toBe('request');
  });
});
