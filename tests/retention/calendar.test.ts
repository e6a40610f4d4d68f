import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type InventorySnapshot, type RetentionInventory } from 'savepoint/toolkit';
import { calendarBucketer, calendarBucketLabel } from '../../src/retention/calendar.js';
import { keepDaily, keepHourly, keepMonthly, keepWeekly, keepYearly, planRetention } from 'savepoint';
import { ZONES } from './arbitraries.js';
import { referenceBucket } from './reference.js';

const UNITS = ['hour', 'day', 'week', 'month', 'year'] as const;
const at = (iso: string): number => Date.parse(iso);
const label = (unit: (typeof UNITS)[number], tz: string, iso: string): string =>
  calendarBucketLabel(unit, calendarBucketer(unit, tz)(at(iso)));

function inventory(times: readonly string[]): RetentionInventory {
  const snapshots: InventorySnapshot[] = times.map((t, i) => ({
    runId: 'r',
    id: `s${String(i).padStart(3, '0')}`,
    sequence: i + 1,
    createdAt: t,
    createdAtMs: at(t),
    status: 'in_progress',
    files: [{ key: `checkpoints/r/history/s${i}.json`, version: '1', size: 1, compressed: false }],
    batches: [],
    parts: [],
    latest: false,
    origin: 'index',
  }));
  return {
    profile: { name: 'default', compressHistory: false },
    runs: [{ runId: 'r', snapshots, batches: [], orphanParts: [], unreadable: [] }],
    preservedRuns: [],
    preservedRunsReadable: true,
    problems: [],
  };
}

function keptTimes(inv: RetentionInventory, rule: Parameters<typeof planRetention>[1]['rules'][number], now: number): string[] {
  // The newest snapshot is kept by the safety rule; ask only about what the calendar rule keeps.
  return planRetention(inv, { rules: [rule] }, now)
    .snapshots.filter((p) => p.reasons.some((r) => r.startsWith('keep-')))
    .map((p) => p.snapshot.createdAt);
}

describe('calendar buckets', () => {
  it('agree with Intl-formatted local dates and textbook ISO weeks (property)', () => {
    const instant = fc.integer({ min: at('1990-01-01T00:00:00Z'), max: at('2045-12-31T00:00:00Z') });
    fc.assert(
      fc.property(
        instant,
        fc.integer({ min: -3 * 86_400_000, max: 3 * 86_400_000 }),
        fc.constantFrom(...ZONES),
        fc.constantFrom(...UNITS),
        (a, delta, tz, unit) => {
          const b = a + delta;
          const bucket = calendarBucketer(unit, tz);
          const ref = (ms: number): string => referenceBucket(unit, tz, ms);
          expect(calendarBucketLabel(unit, bucket(a))).toBe(ref(a));
          expect(bucket(a) === bucket(b)).toBe(ref(a) === ref(b));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('America/New_York fall-back: the repeated 01:00 hour is one bucket, and the day is local', () => {
    const tz = 'America/New_York';
    expect(label('hour', tz, '2024-11-03T05:30:00Z')).toBe('2024-11-03T01'); // 01:30 EDT
    expect(label('hour', tz, '2024-11-03T06:30:00Z')).toBe('2024-11-03T01'); // 01:30 EST, an hour later
    expect(label('hour', tz, '2024-11-03T07:30:00Z')).toBe('2024-11-03T02');
    expect(label('day', tz, '2024-11-03T03:30:00Z')).toBe('2024-11-02'); // 23:30 EDT the day before
    const inv = inventory([
      '2024-11-03T04:30:00.000Z',
      '2024-11-03T05:30:00.000Z',
      '2024-11-03T06:10:00.000Z',
      '2024-11-03T06:30:00.000Z',
      '2024-11-03T07:30:00.000Z',
    ]);
    // Hourly, newest per local hour: 00:30 EDT, [01:30 EDT, 01:10 EST, 01:30 EST] → 01:30 EST, 02:30 EST.
    expect(keptTimes(inv, keepHourly(10, { timeZone: tz }), at('2024-11-04T00:00:00Z'))).toEqual([
      '2024-11-03T04:30:00.000Z',
      '2024-11-03T06:30:00.000Z',
      '2024-11-03T07:30:00.000Z',
    ]);
    // In UTC the same instants fall in four different hours (04, 05, 06, 07).
    expect(keptTimes(inv, keepHourly(10), at('2024-11-04T00:00:00Z'))).toEqual([
      '2024-11-03T04:30:00.000Z',
      '2024-11-03T05:30:00.000Z',
      '2024-11-03T06:30:00.000Z',
      '2024-11-03T07:30:00.000Z',
    ]);
  });

  it('America/New_York spring-forward: 01:59 EST and 03:00 EDT are neighbouring buckets', () => {
    const tz = 'America/New_York';
    expect(label('hour', tz, '2024-03-10T06:59:00Z')).toBe('2024-03-10T01');
    expect(label('hour', tz, '2024-03-10T07:00:00Z')).toBe('2024-03-10T03');
    const b = calendarBucketer('hour', tz);
    expect(b(at('2024-03-10T07:00:00Z')) - b(at('2024-03-10T06:59:00Z'))).toBe(2); // 02:00 never happened
    const inv = inventory(['2024-03-10T06:30:00.000Z', '2024-03-10T06:59:00.000Z', '2024-03-10T07:00:00.000Z', '2024-03-10T07:59:00.000Z']);
    expect(keptTimes(inv, keepHourly(2, { timeZone: tz }), at('2024-03-11T00:00:00Z'))).toEqual([
      '2024-03-10T06:59:00.000Z',
      '2024-03-10T07:59:00.000Z',
    ]);
  });

  it('Europe/Berlin DST weekend: daily buckets follow local midnight (23 h and 25 h days)', () => {
    const tz = 'Europe/Berlin';
    expect(label('day', tz, '2024-03-30T23:00:00Z')).toBe('2024-03-31'); // 00:00 CET on the 31st
    expect(label('day', tz, '2024-03-31T21:59:00Z')).toBe('2024-03-31'); // 23:59 CEST
    expect(label('day', tz, '2024-03-31T22:00:00Z')).toBe('2024-04-01');
    expect(label('day', tz, '2024-10-26T22:00:00Z')).toBe('2024-10-27'); // 00:00 CEST
    expect(label('day', tz, '2024-10-27T22:59:00Z')).toBe('2024-10-27'); // 23:59 CET: a 25-hour day
    const inv = inventory(['2024-03-30T22:30:00.000Z', '2024-03-30T23:30:00.000Z', '2024-03-31T21:30:00.000Z', '2024-03-31T22:30:00.000Z']);
    expect(keptTimes(inv, keepDaily(7, { timeZone: tz }), at('2024-04-02T00:00:00Z'))).toEqual([
      '2024-03-30T22:30:00.000Z', // 23:30 on the 30th
      '2024-03-31T21:30:00.000Z', // 23:30 CEST on the 31st
      '2024-03-31T22:30:00.000Z', // 00:30 on April 1st
    ]);
  });

  it('month and year boundaries are local', () => {
    expect(label('month', 'Europe/Berlin', '2024-01-31T23:30:00Z')).toBe('2024-02');
    expect(label('month', 'UTC', '2024-01-31T23:30:00Z')).toBe('2024-01');
    expect(label('month', 'America/New_York', '2024-03-01T03:00:00Z')).toBe('2024-02'); // Feb 29, 22:00 EST (leap year)
    expect(label('year', 'Pacific/Chatham', '2024-12-31T11:00:00Z')).toBe('2025'); // +13:45
    expect(label('year', 'UTC', '2024-12-31T11:00:00Z')).toBe('2024');
    const inv = inventory(['2024-01-30T12:00:00.000Z', '2024-01-31T22:00:00.000Z', '2024-01-31T23:30:00.000Z', '2024-02-15T12:00:00.000Z']);
    // Berlin: January = {30th, 31st 23:00}; February = {Feb 1 00:30, Feb 15}.
    expect(keptTimes(inv, keepMonthly(5, { timeZone: 'Europe/Berlin' }), at('2024-03-01T00:00:00Z'))).toEqual([
      '2024-01-31T22:00:00.000Z',
      '2024-02-15T12:00:00.000Z',
    ]);
    expect(keptTimes(inv, keepMonthly(5), at('2024-03-01T00:00:00Z'))).toEqual(['2024-01-31T23:30:00.000Z', '2024-02-15T12:00:00.000Z']);
    expect(keptTimes(inv, keepYearly(5), at('2024-03-01T00:00:00Z'))).toEqual(['2024-02-15T12:00:00.000Z']);
  });

  it('ISO weeks: Monday starts the week; week 1 holds the first Thursday', () => {
    expect(label('week', 'UTC', '2024-12-30T00:00:00Z')).toBe('2025-W01'); // Monday
    expect(label('week', 'UTC', '2024-12-29T23:59:00Z')).toBe('2024-W52'); // Sunday
    expect(label('week', 'UTC', '2021-01-03T12:00:00Z')).toBe('2020-W53');
    expect(label('week', 'UTC', '2026-01-01T12:00:00Z')).toBe('2026-W01');
    // Sunday 23:30 in UTC is already Monday in Berlin.
    expect(label('week', 'Europe/Berlin', '2024-12-29T23:30:00Z')).toBe('2025-W01');
    const inv = inventory(['2024-12-23T10:00:00.000Z', '2024-12-29T10:00:00.000Z', '2024-12-30T10:00:00.000Z', '2025-01-05T10:00:00.000Z']);
    expect(keptTimes(inv, keepWeekly(4), at('2025-01-06T00:00:00Z'))).toEqual(['2024-12-29T10:00:00.000Z', '2025-01-05T10:00:00.000Z']);
  });

  it('half-hour and 45-minute zones', () => {
    expect(label('day', 'Asia/Kolkata', '2024-06-30T18:29:00Z')).toBe('2024-06-30');
    expect(label('day', 'Asia/Kolkata', '2024-06-30T18:30:00Z')).toBe('2024-07-01');
    // Lord Howe shifts by 30 minutes: 02:00 LHST → 02:30 LHDT on 2024-10-06.
    expect(label('hour', 'Australia/Lord_Howe', '2024-10-05T15:29:00Z')).toBe('2024-10-06T01');
    expect(label('hour', 'Australia/Lord_Howe', '2024-10-05T15:30:00Z')).toBe('2024-10-06T02');
  });

  it('"keep 7 daily + 4 weekly" keeps the newest of each of the last 7 days and 4 weeks', () => {
    const times: string[] = [];
    for (let h = 0; h < 40 * 24; h += 5) times.push(new Date(at('2024-01-01T00:00:00Z') + h * 3_600_000).toISOString());
    const inv = inventory(times);
    const now = at('2024-02-10T00:00:00Z');
    const plan = planRetention(inv, { rules: [keepDaily(7, { timeZone: 'UTC' }), keepWeekly(4, { timeZone: 'UTC' })] }, now);
    const daily = plan.snapshots.filter((p) => p.reasons.includes('keep-daily')).map((p) => p.snapshot.createdAt.slice(0, 10));
    const weekly = plan.snapshots.filter((p) => p.reasons.includes('keep-weekly')).map((p) => p.snapshot.createdAt.slice(0, 10));
    expect(daily).toEqual(['2024-02-03', '2024-02-04', '2024-02-05', '2024-02-06', '2024-02-07', '2024-02-08', '2024-02-09']);
    expect(weekly).toEqual(['2024-01-21', '2024-01-28', '2024-02-04', '2024-02-09']); // Sundays, then the newest of the current week
    expect(plan.totals.keep).toBe(7 + 4 - 2); // Feb 4 and Feb 9 are kept by both
  });

  it('rejects an unknown time zone with checkpoint_config_invalid', () => {
    expect(() => planRetention(inventory([]), { rules: [keepDaily(1, { timeZone: 'Mars/Olympus' })] }, 0)).toThrow(
      /checkpoint_config_invalid/,
    );
  });
});
