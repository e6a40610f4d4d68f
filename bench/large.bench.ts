/**
 * `npm run bench -- large`: peak memory of one large checkpoint ("time and
 * memory linear in the payload, ≤ 3× the payload's bytes in memory"). Each figure is one
 * child process (bench/large-child.ts) that builds a payload of 100 flat ASCII strings and
 * reports its peak RSS; a child that only builds the payload is the baseline, and a row's
 * figure is (peak − baseline) / payload bytes, the median of ROUNDS rounds (each round runs
 * the modes one after the other, so load drifts hit all alike).
 *
 * `write-memory-twice` (two checkpoints, one string changed: the store keeps two copies) is
 * reported beside them. Two sizes of document: one below the snapshot limit (`maxSnapshotBytes` 128 MiB: one
 * document, the issue's case), and the default 10 MiB limit (the document split into parts).
 *
 *   npm run bench -- large        (BENCH_LARGE_MIB=64, BENCH_LARGE_ROUNDS=3, BENCH_LARGE_SHAPE=strings|nested)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, median, type BenchRow } from './harness.js';

const MIB = Number(process.env.BENCH_LARGE_MIB ?? 64);
const ROUNDS = Number(process.env.BENCH_LARGE_ROUNDS ?? 3);
/** `strings` (100 flat strings, the default) or `nested` (many small records, no big string). */
const SHAPE = process.env.BENCH_LARGE_SHAPE ?? 'strings';
const CHILD = fileURLToPath(new URL('./large-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODES = ['baseline', 'write-memory', 'write-fs', 'resume', 'write-memory-twice'] as const;
const TARGET = 3;

function peakRss(mode: string, dir: string, limit: number | undefined): number {
  const args = ['--import', 'tsx', CHILD, mode, String(MIB), dir, limit ? String(limit) : '', SHAPE];
  return Number(execFileSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim());
}

/** Per mode, the (peak − baseline) / payload ratios of each round. */
export function measure(limit: number | undefined, rounds = ROUNDS): Record<(typeof MODES)[number], number[]> {
  const payload = MIB * 1024 * 1024;
  const out = {
    baseline: [] as number[],
    'write-memory': [] as number[],
    'write-fs': [] as number[],
    resume: [] as number[],
    'write-memory-twice': [] as number[],
  };
  for (let r = 0; r < rounds; r++) {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-large-'));
    try {
      const peaks = new Map<string, number>();
      for (const mode of MODES) peaks.set(mode, peakRss(mode, dir, limit)); // resume reads what write-fs left
      const base = peaks.get('baseline')!;
      out.baseline.push(base / payload);
      for (const mode of MODES.slice(1)) out[mode].push((peaks.get(mode)! - base) / payload);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

export async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const [what, limit, target] of [
    ['one document', 128 * 1024 * 1024, TARGET],
    ['split at 10 MiB', undefined, TARGET],
  ] as const) {
    const m = measure(limit);
    const baseline = `${fmt(median(m.baseline) * MIB)} MiB RSS`;
    for (const mode of ['write-memory', 'write-fs', 'resume', 'write-memory-twice'] as const) {
      const ratio = median(m[mode]);
      // Two checkpoints leave two copies in memoryStorage: reported, beside the single-checkpoint rows' target.
      const goal = mode === 'write-memory-twice' ? undefined : target;
      rows.push({
        area: 'large',
        name: `${MIB} MiB payload${SHAPE === 'strings' ? '' : ` (${SHAPE})`}, ${what}: ${mode} peak RSS over baseline`,
        savepoint: `${fmt(ratio)}× payload`,
        baseline,
        ratio: m[mode].map((x) => `${fmt(x)}×`).join(', '),
        target: goal ? `≤ ${goal}×` : '— (reported)',
        met: goal ? ratio <= goal : true,
      });
    }
  }
  return rows;
}
