/**
 * `bench/results.json`: the latest figure of every bench row, committed with the code. Docs
 * cite a row next to a figure (`0.93×<!-- bench: peers | latest read -->`) and
 * `tests/docs/figures.test.ts` fails when the figure and the row disagree by more than 20 %,
 * so a figure in the README or docs/ can always be traced to a named, re-runnable measurement.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { BenchRow } from './harness.js';

/** One recorded row: what `npm run bench` printed, when, and on which Node. */
export interface RecordedRow {
  readonly savepoint: string;
  readonly baseline: string;
  readonly ratio: string;
  readonly target: string;
  readonly met: boolean;
  readonly measuredAt: string;
  readonly node: string;
}

/** Rows by `area | name`. */
export type BenchResults = Record<string, RecordedRow>;

export const RESULTS_FILE = new URL('./results.json', import.meta.url);

/** The key docs cite a row by. */
export const rowKey = (area: string, name: string): string => `${area} | ${name.trim()}`;

export function readResults(file: URL = RESULTS_FILE): BenchResults {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return {};
    throw error;
  }
}

/** Merges `rows` into the results file: a row measured now replaces its older figure; rows not run now stay. */
export function recordResults(rows: readonly BenchRow[], now = new Date(), file: URL = RESULTS_FILE): void {
  const results = readResults(file);
  for (const r of rows) {
    results[rowKey(r.area, r.name)] = {
      savepoint: r.savepoint,
      baseline: r.baseline,
      ratio: r.ratio,
      target: r.target,
      met: r.met,
      measuredAt: now.toISOString(),
      node: process.version,
    };
  }
  const sorted = Object.fromEntries(Object.entries(results).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  writeFileSync(file, `${JSON.stringify(sorted, null, 2)}\n`);
}
