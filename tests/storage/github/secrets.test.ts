import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { githubStorage, type GitHubStorageEvent } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { deepStrings, TOKEN, text, virtualClock } from '../../support/github.js';

// DESIGN.md invariant 6: no secret reaches an error message, an event or a log. Every
// error thrown and every event emitted here is scanned — messages, causes, details,
// own properties and util.inspect output — for the token.
const open: GitHubEmulator[] = [];
afterEach(async () => {
  for (const gh of open.splice(0)) await gh.close();
});

function scan(label: string, value: unknown, secret: string): void {
  const found = [...deepStrings(value), inspect(value, { depth: 20, showHidden: true })].filter(
    (s) => s.includes(secret) || s.includes(secret.slice(4, 24)),
  );
  expect(found, `${label} leaks the token`).toEqual([]);
}

describe('the token never leaves the Authorization header', () => {
  it('scans every error and event of a session full of failures', async () => {
    const clock = virtualClock();
    const gh = await startGitHubEmulator({ token: TOKEN, clock });
    open.push(gh);
    const events: GitHubStorageEvent[] = [];
    const errors: unknown[] = [];
    const attempt = async (p: Promise<unknown>): Promise<void> => {
      try {
        await p;
      } catch (err) {
        errors.push(err);
      }
    };
    // A fetch that behaves like a chatty HTTP client: its errors quote the request, header included.
    let chatty = false;
    const fetchImpl: typeof fetch = async (input, init) => {
      if (chatty) {
        const auth = new Headers(init?.headers).get('authorization');
        throw new TypeError(`fetch failed for ${String(input)} with headers {authorization: ${auth}}`, {
          cause: new Error(`socket hang up (${auth})`),
        });
      }
      return fetch(input, init);
    };
    const storage = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: TOKEN,
      baseUrl: gh.url,
      clock,
      fetch: fetchImpl,
      minWriteIntervalMs: 0,
      maxRetries: 1,
      onEvent: (e) => events.push(e),
      emergencyQueue: 'memory',
    });

    // A server that echoes the token in its error message (a proxy, a misconfigured gateway).
    gh.faults.add({
      operation: 'repos/get-content',
      times: 3,
      fault: { kind: 'status', status: 500, message: `upstream rejected Bearer ${TOKEN}` },
    });
    await attempt(storage.get('a'));
    gh.faults.add({ operation: 'repos/create-or-update-file-contents', fault: { kind: 'status', status: 502, message: `token=${TOKEN}` } });
    await attempt(storage.put('a', text('1')));
    // Network errors from the fetch itself.
    chatty = true;
    await attempt(storage.get('b'));
    await attempt(storage.put('b', text('1')));
    chatty = false;
    // Rate limits, a queued write, a conflict, a failed verification, a lost race.
    gh.faults.add({ fault: { kind: 'secondary-rate-limit', retryAfterSec: 1 } });
    await attempt(storage.get('c'));
    await attempt(storage.put('c', text('1'), { ifAbsent: true }));
    await attempt(storage.put('c', text('2'), { ifAbsent: true }));
    gh.faults.add({ operation: 'repos/create-or-update-file-contents', times: 3, fault: { kind: 'corrupt-write' } });
    await attempt(storage.put('d', text('1')));
    gh.faults.add({ operation: 'git/update-ref', times: 5, fault: { kind: 'move-head' } });
    await attempt(storage.batch([{ type: 'put', key: 'e', bytes: text('1') }]));
    gh.rateLimit.set({ remaining: 0 });
    await attempt(storage.put('f', text('1')));
    await attempt(storage.get('g'));

    // Wrong credentials: GitHub answers 401.
    const wrong = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: `${TOKEN}x`,
      baseUrl: gh.url,
      clock,
      onEvent: (e) => events.push(e),
      emergencyQueue: 'memory',
    });
    await attempt(wrong.get('a'));

    expect(errors.length).toBeGreaterThanOrEqual(7);
    expect(events.length).toBeGreaterThan(5);
    expect(new Set(errors.map((e) => (e as { reasonCode?: string }).reasonCode))).toEqual(
      new Set(['checkpoint_storage_unavailable', 'checkpoint_conflict', 'checkpoint_atomic_write_failed', 'checkpoint_rate_limited']),
    );
    for (const [i, err] of errors.entries()) scan(`error ${i} (${String((err as Error).message)})`, err, TOKEN);
    for (const [i, ev] of events.entries()) scan(`event ${i} (${ev.type})`, ev, TOKEN);
    scan('stats', storage.stats(), TOKEN);
    scan('pending writes', storage.pendingWrites(), TOKEN);
    scan('the adapter object', storage, TOKEN);
    // The scan can fail: the redaction marker is where the echoed token was.
    expect(errors.some((e) => String((e as Error).message).includes('[redacted]'))).toBe(true);
  });

  it('a token function is redacted as well, once it has been used', async () => {
    const gh = await startGitHubEmulator({ token: TOKEN });
    open.push(gh);
    gh.faults.add({ fault: { kind: 'status', status: 503, message: `bad ${TOKEN}` }, times: 10 });
    const storage = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: async () => TOKEN,
      baseUrl: gh.url,
      maxRetries: 0,
      emergencyQueue: 'memory',
    });
    const err = await storage.get('x').catch((e: unknown) => e);
    scan('error', err, TOKEN);
  });

  it('token-shaped strings are redacted even when the adapter never saw them', async () => {
    const gh = await startGitHubEmulator({ token: TOKEN });
    open.push(gh);
    const other = 'github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ';
    gh.faults.add({ fault: { kind: 'status', status: 503, message: `leaked ${other}` }, times: 10 });
    const storage = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: TOKEN,
      baseUrl: gh.url,
      maxRetries: 0,
      emergencyQueue: 'memory',
    });
    const err = await storage.get('x').catch((e: unknown) => e);
    scan('error', err, other);
  });
});
