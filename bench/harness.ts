/**
 * The bench harness. Each `bench/*.bench.ts` file exports `bench(): Promise<BenchRow[]>`;
 * `npm run bench` (bench/run.ts) runs them all and prints one table.
 *
 * These machines are shared and noisy: compare savepoint with its baseline measured in
 * the same run, interleaved, and report ratios of medians — never absolute timings
 * as pass/fail.
 */
export interface BenchRow {
  /** Component: storage, writer, retention, resume, github, package… */
  readonly area: string;
  /** What is measured, e.g. "fsStorage durable put 4 KB". */
  readonly name: string;
  /** savepoint's figure, with its unit (e.g. "812 ops/s", "0.41 s", "3 req"). */
  readonly savepoint: string;
  /** The baseline's figure in the same run, or "—" when there is none. */
  readonly baseline: string;
  /** The comparison (e.g. "0.97× of baseline"), or "—". */
  readonly ratio: string;
  /** The target from the issue (e.g. "≥ 0.95×"). */
  readonly target: string;
  /** Whether the target was met. */
  readonly met: boolean;
}

/** Median of a non-empty sample. */
export function median(samples: readonly number[]): number {
  if (samples.length === 0) throw new Error('median of an empty sample');
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Milliseconds taken by `fn`, from the high-resolution clock. */
export async function timeMs(fn: () => unknown): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/**
 * Runs `a` and `b` alternately `rounds` times (so drift in machine load hits both
 * alike) and returns the per-round durations of each in milliseconds.
 */
export async function interleave(rounds: number, a: () => unknown, b: () => unknown): Promise<{ a: number[]; b: number[] }> {
  const out = { a: [] as number[], b: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      out.a.push(await timeMs(a));
      out.b.push(await timeMs(b));
    } else {
      out.b.push(await timeMs(b));
      out.a.push(await timeMs(a));
    }
  }
  return out;
}

/** Formats a number with a fixed count of significant digits. */
export function fmt(value: number, digits = 3): string {
  return Number(value.toPrecision(digits)).toLocaleString('en-US');
}
