import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readResults, rowKey, type BenchResults } from '../../bench/results.js';

/**
 * Figures in the README and docs/ come from named bench rows. A figure cites its row with a
 * marker right after it: `0.93×<!-- bench: peers | memory, latest read -->` (the row's ratio,
 * for a figure in ×) or `37.1 KB<!-- bench: package | core + … -->` (the row's savepoint
 * figure; `| baseline` after the name picks the baseline's). This test fails when a marker
 * names no recorded row, or when the figure and `bench/results.json` (what `npm run bench`
 * last wrote, committed with the code) differ by more than 20 %. In the README every line that
 * states a ratio, a size or a time must cite a row, or say `<!-- not measured -->` (a limit or
 * a setting, not a measurement).
 */

const ROOT = join(import.meta.dirname, '..', '..');
const TOLERANCE = 0.2;
const MARKER = /<!-- bench: ([^|>]+?) \| ([^>]+?)(?: \| (savepoint|baseline|ratio))? -->/g;
const FIGURE_BEFORE = /(-?\d[\d,]*(?:\.\d+)?)\s?(×|%|[KMG]i?B|ms|µs|s\b|[a-z]+\/s|req)?\**\)?$/;
const FIGURE_ON_LINE = /\d[\d,]*(?:\.\d+)?\s?(×|[KMG]i?B\b|ms\b|µs\b)/;

interface Citation {
  readonly file: string;
  readonly line: number;
  readonly figure: number;
  readonly unit: string;
  readonly key: string;
  readonly field: 'savepoint' | 'baseline' | 'ratio';
}

const numberIn = (text: string): number | undefined => {
  const m = /-?\d[\d,]*(?:\.\d+)?/.exec(text);
  return m ? Number(m[0].replaceAll(',', '')) : undefined;
};

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

/** Why a citation does not hold, or undefined when it does. */
export function checkCitation(c: Citation, results: BenchResults): string | undefined {
  const where = `${c.file}:${c.line}`;
  if (Number.isNaN(c.figure)) return `${where}: no figure right before the marker of "${c.key}"`;
  const row = results[c.key];
  if (!row) return `${where}: "${c.key}" is no row of bench/results.json (run npm run bench, or fix the name)`;
  const recorded = numberIn(row[c.field]);
  if (recorded === undefined) return `${where}: the ${c.field} of "${c.key}" has no number (${row[c.field]})`;
  const off = Math.abs(c.figure - recorded) / Math.max(Math.abs(recorded), 1e-9);
  if (off > TOLERANCE)
    return `${where}: says ${c.figure}${c.unit} but "${c.key}" last measured ${row[c.field]} (${row.measuredAt}): ${(off * 100).toFixed(0)} % apart`;
  return undefined;
}

describe('documented figures agree with the bench', () => {
  const results = readResults();
  const files = docFiles().map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));

  it('every cited figure is within 20 % of its row in bench/results.json', () => {
    const problems = files.flatMap(({ file, text }) => citationsIn(file, text).flatMap((c) => checkCitation(c, results) ?? []));
    expect(problems).toEqual([]);
  });

  it('every README line that states a ratio, a size or a time cites a bench row or says it is not measured', () => {
    const readme = files.find((f) => f.file === 'README.md')!;
    const uncited = proseLines(readme.text)
      .filter(({ text }) => FIGURE_ON_LINE.test(text) && !/<!-- (bench: |not measured -->)/.test(text))
      .map(({ line, text }) => `README.md:${line}: ${text.slice(0, 100)}`);
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
});
