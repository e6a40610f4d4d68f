/**
 * `npm run bench`: runs every bench/*.bench.ts (or those named on the command line,
 * e.g. `npm run bench -- storage writer`) and prints one table.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchRow } from './harness.js';
import { recordResults } from './results.js';

const dir = fileURLToPath(new URL('.', import.meta.url));
// `--no-record` leaves bench/results.json (the figures docs cite) as it is.
const record = !process.argv.includes('--no-record');
const only = process.argv.slice(2).filter((a) => a !== '--no-record');
// The storage row comes first, then the layers built on it; unknown files last.
const ORDER = ['storage', 'writer', 'retention', 'resume', 'github', 'postgres', 'langgraph', 'dedup', 'package'];
const rank = (f: string): number => {
  const i = ORDER.indexOf(f.replace(/\.bench\.ts$/, ''));
  return i === -1 ? ORDER.length : i;
};
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));

const rows: BenchRow[] = [];
for (const file of files) {
  const mod = (await import(pathToFileURL(`${dir}${file}`).href)) as { bench: () => Promise<BenchRow[]> };
  process.stderr.write(`running ${file}…\n`);
  rows.push(...(await mod.bench()));
}

const header = ['area', 'measure', 'savepoint', 'baseline', 'ratio', 'target', 'met'];
const table = [header, ...rows.map((r) => [r.area, r.name, r.savepoint, r.baseline, r.ratio, r.target, r.met ? 'yes' : 'NO'])];
const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
const line = (row: string[]): string => `| ${row.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
console.log(line(header));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const row of table.slice(1)) console.log(line(row));
if (record) recordResults(rows);
console.log(
  `\nnode ${process.version}, ${process.platform}/${process.arch}; medians of interleaved runs; ratios compare runs made in this same process.`,
);
