import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readResults, rowKey, type BenchResults } from '../../bench/results.js';

/**
 * Figures in the README and docs/ come from named bench rows. A figure cites its row with a
 * marker right after it: `0.93×<!-- bench: peers | memory, latest read -->` (the row's ratio,
 * for a figure in ×) or `37.1 KB<!-- bench: package | core + … -->` (the row's savepoint
 * figure; `| baseline` or `| ratio` after the name picks that field instead, and a number after
 * the field, `| savepoint 2`, its second figure). This test fails when a marker names no
 * recorded row, when the figure and `bench/results.json` (what `npm run bench` last wrote,
 * committed with the code) differ by more than 20 %, or when their units differ.
 *
 * What counts as a figure, in the README and every docs/ page alike (prose and tables, not code
 * blocks): a number with a ratio sign (`0.9×`, not the product `8 × 100`), a byte size
 * (`KB`, `MiB`…), a time in `ms` or `µs`, or a rate (`ops/s`, `turns/s`). Every line that states
 * one must cite a row, or say `<!-- not measured -->` (optionally `<!-- not measured: why -->`):
 * a limit, a setting or a design constant, not a measurement. Seconds are not counted: in these
 * pages they are leases, windows and timeouts, and the few measured ones are checked by hand.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const TOLERANCE = 0.2;
const MARKER = /<!-- bench: ([^|>]+?) \| ([^>]+?)(?: \| (savepoint|baseline|ratio)(?: ([1-9]))?)? -->/g;
// A digit inside a word (`V8`, a commit id) is no figure.
const NUMBER_WITH_UNIT = /(?<![\w.])(-?\d[\d,]*(?:\.\d+)?)\s?(×|%|[KMG]i?B|ms|µs|s\b|[a-z]+\/s|req)?/g;
const FIGURE_BEFORE = /(-?\d[\d,]*(?:\.\d+)?)\s?(×|%|[KMG]i?B|ms|µs|s\b|[a-z]+\/s|req)?\**\)?$/;
const FIGURE_ON_LINE = /\d[\d,]*(?:\.\d+)?\s?(×(?!\s?\d)|[KMG]i?B\b|ms\b|µs\b|[a-z]+\/s\b)/;
const EXEMPT = /<!-- (bench: |not measured(:[^>]*)? -->)/;

interface Citation {
  readonly file: string;
  readonly line: number;
  readonly figure: number;
  readonly unit: string;
  readonly key: string;
  readonly field: 'savepoint' | 'baseline' | 'ratio';
  /** Which figure of the field, from 1. */
  readonly nth: number;
}

/** The `nth` number of a recorded field, with the unit right after it ('' when none). */
function figureIn(text: string, nth: number): { value: number; unit: string } | undefined {
  const m = [...text.matchAll(NUMBER_WITH_UNIT)][nth - 1];
  return m ? { value: Number(m[1]!.replaceAll(',', '')), unit: m[2] ?? '' } : undefined;
}

/** Every rate (`ops/s`, `checkpoints/s`, `turns/s`) counts as one unit. */
const unitKind = (unit: string): string => (unit.endsWith('/s') ? '/s' : unit);

/** Markdown outside fenced code blocks, line by line. */
function proseLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fenced = false;
  text.split('\n').forEach((t, i) => {
    if (/^\s*```/.test(t)) fenced = !fenced;
    else if (!fenced) out.push({ line: i + 1, text: t });
  });
  return out;
}

function citationsIn(file: string, text: string): Citation[] {
  const out: Citation[] = [];
  for (const { line, text: t } of proseLines(text)) {
    for (const m of t.matchAll(MARKER)) {
      const before = FIGURE_BEFORE.exec(t.slice(Math.max(0, m.index - 40), m.index));
      const unit = before?.[2] ?? '';
      out.push({
        file,
        line,
        figure: before ? Number(before[1]!.replaceAll(',', '')) : Number.NaN,
        unit,
        key: rowKey(m[1]!.trim(), m[2]!),
        field: (m[3] as Citation['field'] | undefined) ?? (unit === '×' ? 'ratio' : 'savepoint'),
        nth: m[4] ? Number(m[4]) : 1,
      });
    }
  }
  return out;
}

function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', ...docs];
}

/** Lines stating a figure with neither a bench marker nor `<!-- not measured -->`. */
export function uncitedFigures(file: string, text: string): string[] {
  return proseLines(text).flatMap(({ line, text: t }) => {
    const figure = FIGURE_ON_LINE.exec(t);
    if (!figure || EXEMPT.test(t)) return [];
    return [
      `${file}:${line}: "${figure[0]}" cites no bench row (<!-- bench: area | name -->) nor says <!-- not measured -->: ${t.trim().slice(0, 100)}`,
    ];
  });
}

/** Why a citation does not hold, or undefined when it does. */
export function checkCitation(c: Citation, results: BenchResults): string | undefined {
  const where = `${c.file}:${c.line}`;
  if (Number.isNaN(c.figure)) return `${where}: no figure right before the marker of "${c.key}"`;
  const row = results[c.key];
  if (!row) return `${where}: "${c.key}" is no row of bench/results.json (run npm run bench, or fix the name)`;
  const field = c.nth === 1 ? c.field : `${c.field} ${c.nth}`;
  const recorded = figureIn(row[c.field], c.nth);
  if (recorded === undefined) return `${where}: the ${field} of "${c.key}" has no number ${c.nth} (${row[c.field]})`;
  if (c.unit && recorded.unit && unitKind(c.unit) !== unitKind(recorded.unit))
    return `${where}: says ${c.figure} ${c.unit} but the ${field} of "${c.key}" is in ${recorded.unit} (${row[c.field]})`;
  const off = Math.abs(c.figure - recorded.value) / Math.max(Math.abs(recorded.value), 1e-9);
  if (off > TOLERANCE)
    return `${where}: says ${c.figure}${c.unit} but the ${field} of "${c.key}" last measured ${row[c.field]} (${row.measuredAt}): ${(off * 100).toFixed(0)} % apart`;
  return undefined;
}

describe('documented figures agree with the bench', () => {
  const results = readResults();
  const files = docFiles().map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));

  it('every cited figure is within 20 % of its row in bench/results.json', () => {
    const problems = files.flatMap(({ file, text }) => citationsIn(file, text).flatMap((c) => checkCitation(c, results) ?? []));
    expect(problems).toEqual([]);
  });

  it('every line that states a ratio, a size, a time or a rate cites a bench row or says it is not measured', () => {
    const uncited = files.flatMap(({ file, text }) => uncitedFigures(file, text));
    expect(uncited).toEqual([]);
  });

  it('the check itself catches a figure that drifted, a missing row and a marker without a figure', () => {
    const results: BenchResults = {
      'peers | latest read': {
        savepoint: '16 µs',
        baseline: '17 µs',
        ratio: '0.92× of getTuple',
        target: '≤ 1×',
        met: true,
        measuredAt: '2026-11-29T00:00:00.000Z',
        node: 'v20',
      },
    };
    const cite = (line: string) => citationsIn('x.md', line)[0]!;
    expect(checkCitation(cite('reads at 0.95×<!-- bench: peers | latest read -->'), results)).toBeUndefined();
    expect(checkCitation(cite('reads at 1.3×<!-- bench: peers | latest read -->'), results)).toMatch(/41 % apart/);
    expect(checkCitation(cite('in 18 µs<!-- bench: peers | latest read -->'), results)).toBeUndefined();
    expect(checkCitation(cite('beside 17 µs<!-- bench: peers | latest read | baseline -->'), results)).toBeUndefined();
    expect(checkCitation(cite('in 18 µs<!-- bench: peers | nothing -->'), results)).toMatch(/no row/);
    expect(checkCitation(cite('fast<!-- bench: peers | latest read -->'), results)).toMatch(/no figure/);
  });

  it('the check reads the figure a marker asks for and refuses a figure in another unit', () => {
    const results: BenchResults = {
      'fs-peers | 8 runs': {
        savepoint: '2,340 µs: main 770 µs, pool 1,530 µs, V8 helpers 40 µs (b604502)',
        baseline: '1,970 ops/s',
        ratio: '1.25× stored, 0.16× on disk',
        target: '—',
        met: true,
        measuredAt: '2026-11-29T00:00:00.000Z',
        node: 'v20',
      },
    };
    const cite = (line: string) => citationsIn('x.md', line)[0]!;
    expect(checkCitation(cite('on disk 0.16×<!-- bench: fs-peers | 8 runs | ratio 2 -->'), results)).toBeUndefined();
    expect(checkCitation(cite('on disk 0.16×<!-- bench: fs-peers | 8 runs -->'), results)).toMatch(/ratio of .* 1\.25× stored/);
    expect(checkCitation(cite('main thread 770 µs<!-- bench: fs-peers | 8 runs | savepoint 2 -->'), results)).toBeUndefined();
    expect(checkCitation(cite('V8 40 µs<!-- bench: fs-peers | 8 runs | savepoint 4 -->'), results)).toBeUndefined();
    expect(checkCitation(cite('main thread 770 µs<!-- bench: fs-peers | 8 runs | savepoint 5 -->'), results)).toMatch(/no number 5/);
    expect(checkCitation(cite('2.34 ms<!-- bench: fs-peers | 8 runs -->'), results)).toMatch(/is in µs/);
    expect(checkCitation(cite('1,970 checkpoints/s<!-- bench: fs-peers | 8 runs | baseline -->'), results)).toBeUndefined();
  });

  it('a line with a measured-looking figure needs a marker; a product, a plain count or seconds do not', () => {
    expect(uncitedFigures('x.md', 'a put costs 0.4 ms here\n')).toEqual([
      'x.md:1: "0.4 ms" cites no bench row (<!-- bench: area | name -->) nor says <!-- not measured -->: a put costs 0.4 ms here',
    ]);
    for (const figure of ['1.3×', '7.23 MB', '64 MiB', '18 µs', '504 ops/s', '29.9 turns/s'])
      expect(uncitedFigures('x.md', `it is ${figure}`)).toHaveLength(1);
    for (const plain of ['8 × 100 checkpoints', '10,000 snapshots', 'a 30 s lease', '```\n5 ms\n```'])
      expect(uncitedFigures('x.md', plain)).toEqual([]);
    expect(uncitedFigures('x.md', 'at most 64 MiB<!-- not measured -->')).toEqual([]);
    expect(uncitedFigures('x.md', 'at most 64 MiB<!-- not measured: a setting -->')).toEqual([]);
    expect(uncitedFigures('x.md', 'at 0.9×<!-- bench: peers | x -->')).toEqual([]);
  });
});
