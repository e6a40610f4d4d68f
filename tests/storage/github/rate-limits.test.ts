import { describe, expect, it } from 'vitest';
import { listAll } from 'savepoint';
import { envPerTest, str, text, type Env } from '../../support/github.js';

const env = envPerTest();
const waits = (e: Env, kind?: 'primary' | 'secondary'): number[] =>
  e.events.flatMap((ev) => (ev.type === 'rate_limit_wait' && (kind === undefined || ev.kind === kind) ? [ev.waitMs] : []));

describe('rate-limit tracking', () => {
  it('tracks x-ratelimit-remaining/reset from every response', async () => {
    const e = await env();
    await e.storage.get('a');
    await e.storage.put('a', text('1'));
    const budget = e.storage.rateBudget();
    expect(budget.remaining).toBe(e.gh.rateLimit.remaining);
    expect(budget.limit).toBe(5000);
    expect(budget.resetAtMs).toBe(Math.ceil(e.gh.rateLimit.resetAtMs / 1000) * 1000);
    expect(budget.low).toBe(false);
    expect(e.storage.stats().requests).toBe(e.gh.requestLog.length);
  });

  it('is low below 100 remaining (spec threshold) and warns once per window', async () => {
    const e = await env();
    e.gh.rateLimit.set({ remaining: 101 });
    await e.storage.get('a');
    expect(e.storage.rateBudget()).toMatchObject({ remaining: 100, low: false });
    await e.storage.get('a');
    expect(e.storage.rateBudget()).toMatchObject({ remaining: 99, low: true });
    await e.storage.get('a');
    const warnings = e.events.filter((ev) => ev.type === 'rate_limit_low');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', remaining: 99, message: 'Rate limit low: 99 remaining' });
  });

  it('the low-water mark is configurable, and a nearly spent hourly content budget is low too', async () => {
    const e = await env({ storage: { lowRateLimit: 1000 } });
    e.gh.rateLimit.set({ remaining: 999 });
    await e.storage.get('a');
    expect(e.storage.rateBudget().low).toBe(true);

    const c = await env({ storage: { contentRequestsPerHour: 8, lowContentRequests: 4 } });
    await c.storage.put('x', text('1')); // 1 content request
    await c.storage.batch([{ type: 'put', key: 'y', bytes: text('2') }]); // 3 more
    expect(c.storage.rateBudget().low).toBe(false);
    await c.storage.put('z', text('3')); // 5th: 3 left < 4
    expect(c.storage.rateBudget().low).toBe(true);
  });
});

describe('primary rate limit (403/429, x-ratelimit-remaining: 0)', () => {
  for (const status of [403, 429] as const) {
    it(`waits until the reset plus 5 s, through the clock, then retries (${status})`, async () => {
      const e = await env({ emulator: { rateLimit: { windowMs: 120_000 } } });
      await e.storage.put('p', text('0'));
      e.gh.faults.add({ operation: 'repos/get-content', fault: { kind: 'primary-rate-limit', status } });
      const startedAt = e.clock.now();
      const reset = e.gh.rateLimit.resetAtMs;
      expect(str((await e.storage.get('p'))?.bytes)).toBe('0');
      const [wait] = waits(e, 'primary');
      expect(wait).toBeGreaterThan(100_000);
      expect(wait).toBeLessThanOrEqual(125_000);
      expect(e.clock.now()).toBeGreaterThanOrEqual(reset);
      expect(e.clock.now() - startedAt).toBeLessThan(300_000);
    });
  }

  it('does not spend a request it knows will be refused: after remaining hits 0 it waits first', async () => {
    const e = await env({ emulator: { rateLimit: { windowMs: 60_000 } } });
    e.gh.rateLimit.set({ remaining: 1 });
    await e.storage.get('a');
    await e.storage.get('b');
    expect(e.gh.requestLog.map((r) => r.status)).toEqual([404, 404]);
    expect(waits(e, 'primary')).toHaveLength(1);
  });

  it('never waits longer than 5 minutes: a read fails with checkpoint_rate_limited and the time to retry', async () => {
    const e = await env();
    e.gh.faults.add({ fault: { kind: 'primary-rate-limit' } });
    const err = await e.storage.get('x').catch((x: unknown) => x);
    expect(err).toMatchObject({ reasonCode: 'checkpoint_rate_limited', details: { kind: 'primary' } });
    const retryAt = (err as { details: { retryAtMs: number } }).details.retryAtMs;
    expect(retryAt).toBeGreaterThan(e.clock.now() + 300_000);
    expect(Math.max(0, ...e.clock.delays)).toBeLessThan(300_000);
    // The cap is an option.
    const patient = await env({ storage: { maxRateLimitWaitMs: 4_000_000 } });
    patient.gh.faults.add({ fault: { kind: 'primary-rate-limit' } });
    expect(await patient.storage.get('x')).toBeUndefined();
    expect(waits(patient, 'primary')[0]).toBeGreaterThan(3_000_000);
  });
});

describe('secondary rate limits', () => {
  it('honours retry-after', async () => {
    const e = await env();
    e.gh.faults.add({ operation: 'repos/get-content', fault: { kind: 'secondary-rate-limit', retryAfterSec: 30, status: 429 } });
    expect(await e.storage.get('x')).toBeUndefined();
    expect(waits(e, 'secondary')).toEqual([30_000]);
  });

  it('without retry-after waits at least a minute, doubling while it persists', async () => {
    const e = await env();
    e.gh.faults.add({ operation: 'repos/get-content', times: 3, fault: { kind: 'secondary-rate-limit' } });
    expect(await e.storage.get('x')).toBeUndefined();
    expect(waits(e, 'secondary')).toEqual([60_000, 120_000, 240_000]);
  });

  it('gives up after maxSecondaryRetries with checkpoint_rate_limited', async () => {
    const e = await env({ storage: { maxSecondaryRetries: 1 } });
    e.gh.faults.add({ operation: 'repos/get-content', times: 5, fault: { kind: 'secondary-rate-limit', retryAfterSec: 1 } });
    await expect(e.storage.get('x')).rejects.toMatchObject({ reasonCode: 'checkpoint_rate_limited', details: { kind: 'secondary' } });
  });

  it('stays under the emulator’s real content-creation limit by pacing, and recovers when it is hit', async () => {
    const e = await env({ emulator: { secondaryLimit: { perMinute: 5, perHour: 500 } }, storage: { minWriteIntervalMs: 0 } });
    for (let i = 0; i < 4; i++) await e.storage.batch([{ type: 'put', key: `s/${i}`, bytes: text(String(i)) }]);
    expect(e.gh.state.listFiles().filter((f) => f.path.startsWith('s/'))).toHaveLength(4);
    expect(e.gh.requestLog.some((r) => r.status === 403)).toBe(true);
    expect(waits(e, 'secondary').length).toBeGreaterThan(0);
  });
});

describe('server errors and slow answers', () => {
  it('retries reads after 5xx and network errors, with back-off on the clock', async () => {
    const e = await env();
    e.gh.faults.add({ operation: 'repos/get-content', times: 2, fault: { kind: 'status', status: 502 } });
    e.gh.faults.add({ operation: 'git/get-tree', fault: { kind: 'network-error' } });
    expect(await e.storage.get('x')).toBeUndefined();
    expect((await listAll(e.storage, '')).map((x) => x.key)).toEqual(['README.md']);
    expect(e.events.filter((ev) => ev.type === 'request_retry').map((ev) => ev.type === 'request_retry' && ev.reason)).toEqual([
      'server_error',
      'server_error',
      'network',
    ]);
  });

  it('a read that outlives requestTimeoutMs is abandoned and retried', async () => {
    const e = await env({ storage: { requestTimeoutMs: 100 } });
    e.gh.faults.add({ operation: 'repos/get-content', fault: { kind: 'delay', ms: 400 } });
    expect(await e.storage.get('x')).toBeUndefined();
    expect(e.events.some((ev) => ev.type === 'request_retry' && ev.reason === 'timeout')).toBe(true);
  });

  it('reports persistent 5xx as checkpoint_storage_unavailable', async () => {
    const e = await env({ storage: { maxRetries: 1 } });
    e.gh.faults.add({ operation: 'repos/get-content', times: 5, fault: { kind: 'status', status: 503 } });
    await expect(e.storage.get('x')).rejects.toMatchObject({ reasonCode: 'checkpoint_storage_unavailable', details: { status: 503 } });
  });
});
