import { inspect } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CheckpointError, listAll } from 'savepoint';
import { githubStorage, type GitHubStorageEvent } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { deepStrings, text, virtualClock } from '../../support/github.js';

// DESIGN invariant 6 (a token once leaked through an error's name): whatever string property of
// whatever error `fetch` (or the server) produces holds the token — message, name, stack,
// code, nested causes, an AggregateError's errors, extra fields — nothing the adapter
// surfaces (errors, deep; events; console output) contains it.
let gh: GitHubEmulator;
const clock = virtualClock();
beforeAll(async () => {
  gh = await startGitHubEmulator({ clock, secondaryLimit: false, logBodies: false });
});
afterAll(async () => {
  await gh.close();
});

/** A string property: plain words, or words around the token. */
const carrier = (token: string): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ maxLength: 12 }),
    fc
      .tuple(fc.string({ maxLength: 8 }), fc.constantFrom('', ' ', 'Bearer ', 'token=', 'authorization: '))
      .map(([a, b]) => `${a}${b}${token}${a}`),
  );

type Shape = {
  kind: 'error' | 'type' | 'aggregate' | 'object' | 'string';
  message: string;
  name: string;
  stack: string;
  code: string;
  extra: string;
  cause?: Shape;
  errors: Shape[];
};

/** An error tree at most `depth` levels deep (causes and AggregateError members). */
const shape = (token: string, depth: number): fc.Arbitrary<Shape> =>
  fc.record({
    kind: fc.constantFrom('error', 'type', 'aggregate', 'object', 'string'),
    message: carrier(token),
    name: carrier(token),
    stack: carrier(token),
    code: carrier(token),
    extra: carrier(token),
    cause: depth > 0 ? fc.option(shape(token, depth - 1), { nil: undefined }) : fc.constant(undefined),
    errors: depth > 0 ? fc.array(shape(token, depth - 1), { maxLength: 2 }) : fc.constant([]),
  });

/** Builds the thrown value a shape describes. */
function build(s: Shape): unknown {
  if (s.kind === 'string') return s.message;
  if (s.kind === 'object')
    return {
      message: s.message,
      name: s.name,
      code: s.code,
      details: { extra: s.extra, nested: [s.stack] },
      cause: s.cause ? build(s.cause) : undefined,
    };
  const err: Error & Record<string, unknown> =
    s.kind === 'aggregate'
      ? (new AggregateError(s.errors.map(build), s.message) as unknown as Error & Record<string, unknown>)
      : s.kind === 'type'
        ? (new TypeError(s.message) as unknown as Error & Record<string, unknown>)
        : (new Error(s.message) as unknown as Error & Record<string, unknown>);
  err.name = s.name;
  err.stack = s.stack;
  err.code = s.code;
  err.details = { extra: s.extra, list: [s.extra] };
  if (s.cause) err.cause = build(s.cause);
  return err;
}

describe('githubStorage scrubs every error and event it surfaces', () => {
  it("property: a token in any string property of any error thrown by fetch, or in the server's message, never reaches an error, an event or the console", async () => {
    const logged: unknown[] = [];
    let runs = 0;
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation((...args: unknown[]) => void logged.push(args)),
    );
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.stringMatching(/^[A-Za-z0-9_]{10,40}$/).chain((secret) => fc.tuple(fc.constant(`tok${secret}`), shape(`tok${secret}`, 3))),
          fc.constantFrom('fetch-throws', 'server-message'),
          fc.constantFrom('get', 'put', 'delete', 'batch', 'list'),
          async ([token, tree], source, op) => {
            const thrown = build(tree);
            const seed = ++runs;
            const events: GitHubStorageEvent[] = [];
            const fetchImpl: typeof fetch = async (input, init) => {
              if (source === 'fetch-throws') throw thrown;
              return fetch(input, init);
            };
            if (source === 'server-message')
              gh.faults.add({
                times: 20,
                fault: { kind: 'status', status: 500, message: `upstream said ${token}; ${deepStrings(thrown).join(' ')}` },
              });
            const storage = githubStorage({
              owner: gh.owner,
              repo: gh.repo,
              token,
              baseUrl: gh.url,
              fetch: fetchImpl,
              clock,
              maxRetries: 0,
              minWriteIntervalMs: 0,
              emergencyQueue: 'memory',
              basePath: `scrub/${seed}`,
              onEvent: (e) => events.push(e),
            });
            const run = (): Promise<unknown> =>
              op === 'get'
                ? storage.get('k')
                : op === 'put'
                  ? storage.put('k', text('v'))
                  : op === 'delete'
                    ? storage.delete('k', { ifVersion: 'a'.repeat(40) })
                    : op === 'batch'
                      ? storage.batch([{ type: 'put', key: 'k', bytes: text('v') }])
                      : listAll(storage, '');
            const err = await run().then(
              () => undefined,
              (e: unknown) => e,
            );
            gh.faults.clear();
            expect(err).toBeInstanceOf(CheckpointError);
            const everything = [
              ...deepStrings(err),
              inspect(err, { depth: 30, showHidden: true }),
              ...deepStrings(events),
              inspect(events, { depth: 30 }),
              ...deepStrings(logged),
              JSON.stringify(err),
            ];
            const leaks = everything.filter((s) => s.includes(token));
            expect(leaks).toEqual([]);
          },
        ),
        { numRuns: Number(process.env.SCRUB_RUNS ?? 60) },
      );
    } finally {
      for (const s of spies) s.mockRestore();
    }
  }, 120_000);

  it("regression: the fetch error's name is scrubbed in the cause", async () => {
    const token = 'ghp_nameLEAKabcdefghijklmnopqrstuvwxyz0123';
    const fetchImpl: typeof fetch = () => {
      const e = new Error('connect ECONNREFUSED');
      e.name = `FetchError(${token})`;
      return Promise.reject(e);
    };
    const storage = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: 'another-token-xyz',
      baseUrl: gh.url,
      fetch: fetchImpl,
      clock,
      maxRetries: 0,
      emergencyQueue: 'memory',
    });
    const err = (await storage.get('k').catch((e: unknown) => e)) as CheckpointError;
    expect(err.reasonCode).toBe('checkpoint_storage_unavailable');
    expect((err.cause as Error).name).toBe('FetchError([redacted])');
    expect(deepStrings(err).filter((s) => s.includes(token))).toEqual([]);
  });
});
