/**
 * Where a lone group's write is made (pure: no I/O, no clock): on the event loop or on libuv's
 * pool, whichever returned sooner lately. A write on the loop skips the pool's two hand-offs
 * between threads; but under CPU contention a loop woken by the disk may wait for a core longer
 * than the pool's hand-off takes, and on a slow disk it would stall every other callback of the
 * process. So both places stay timed: the chosen one by every write made there, the other by a
 * short run of probes now and then, rarer while they keep confirming the choice.
 */

/**
 * How long lone groups' writes took lately on the event loop and on the pool (ms, from the call
 * to the moment the loop goes on; undefined: not timed yet), how many lone groups went the
 * faster way since the last probe run, how many make the next one due, and the run under way.
 */
export interface LoneWriteTimes {
  loopMs: number | undefined;
  poolMs: number | undefined;
  sinceProbe: number;
  probeEvery: number;
  probe: LoneProbeRun | undefined;
  /** Lone writes on the loop in a row (pool writes between them not counted) that took over {@link LOOP_WRITE_MAX_MS}. */
  slowLoopWrites: number;
}

/** A run of lone groups sent to `place`: the choice before it (none for a place's first run), how many are left, their times. */
export interface LoneProbeRun {
  readonly place: 'loop' | 'pool';
  readonly from: 'loop' | 'pool' | undefined;
  left: number;
  readonly times: number[];
}

/** How many lone groups go the faster way between two probe runs the other way, at first and whenever the choice changed. */
export const LONE_PROBE_EVERY = 64;
/** The longest interval between probe runs: each run that confirms the choice doubles it, up to this. */
export const LONE_PROBE_EVERY_MAX = 1024;
/** How many lone groups a probe run sends the other way (its first only moves there: not timed). */
export const LONE_PROBE_RUN = 4;
/** The weight of the newest time in a moving average. */
const LONE_TIME_WEIGHT = 0.25;
/**
 * A time counts as at most this many times the place's average: one slow write (a journal
 * commit, a collection) barely moves it, while a place that became slower (a loaded machine)
 * still moves it by a factor of 1.19 a write (2 ** LONE_TIME_WEIGHT), so past any other average
 * within a few writes.
 */
export const LONE_TIME_CLIP = 2;
/** Times below this count as this (a clock's resolution; never 0 in a geometric average). */
const MIN_TIMED_MS = 0.001;
/**
 * Lone writes on the loop averaging longer than this go to the pool whatever the pool takes: a
 * slow disk (a spinning one, a network volume) would stall every other callback of the process
 * for each write. The loop is then timed again only every {@link SLOW_LOOP_PROBE_EVERY} lone groups.
 */
export const LOOP_WRITE_MAX_MS = 2;
export const SLOW_LOOP_PROBE_EVERY = LONE_PROBE_EVERY_MAX;
/**
 * Loop writes in a row over {@link LOOP_WRITE_MAX_MS} that leave the loop at once: a disk turned
 * slow is not waited out while the clipped average climbs (one slow write alone is not this).
 */
export const SLOW_LOOP_WRITES = 3;

/** Nothing timed yet: the first lone groups go to the loop, then to the pool, a run each. */
export const untimedLoneWrites = (): LoneWriteTimes => ({
  loopMs: undefined,
  poolMs: undefined,
  sinceProbe: 0,
  probeEvery: LONE_PROBE_EVERY,
  probe: undefined,
  slowLoopWrites: 0,
});

const loopTooSlow = (times: Readonly<LoneWriteTimes>): boolean => times.loopMs !== undefined && times.loopMs > LOOP_WRITE_MAX_MS;

/** The faster place by the averages (both timed); never the loop while its writes average over {@link LOOP_WRITE_MAX_MS}. */
const fasterPlace = (loopMs: number, poolMs: number): 'loop' | 'pool' => (loopMs > LOOP_WRITE_MAX_MS || loopMs > poolMs ? 'pool' : 'loop');

/**
 * Where the next lone group's write is made: where a probe run sends it; a place not timed yet
 * (the loop first, then the pool); else where lone writes returned sooner lately.
 */
export function lonePlace(times: Readonly<LoneWriteTimes>): 'loop' | 'pool' {
  if (times.probe) return times.probe.place;
  if (times.loopMs === undefined) return 'loop';
  if (times.poolMs === undefined) return 'pool';
  return fasterPlace(times.loopMs, times.poolMs);
}

const other = (place: 'loop' | 'pool'): 'loop' | 'pool' => (place === 'loop' ? 'pool' : 'loop');

/** A geometric moving average: a write's time has a long tail on a busy disk, and the typical write is what a thread waits for. */
const averaged = (before: number, ms: number): number => before * (Math.min(ms, before * LONE_TIME_CLIP) / before) ** LONE_TIME_WEIGHT;

function setAverage(times: LoneWriteTimes, place: 'loop' | 'pool', ms: number): void {
  if (place === 'loop') times.loopMs = ms;
  else times.poolMs = ms;
}

function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : Math.sqrt(sorted[mid - 1]! * sorted[mid]!);
}

/**
 * Notes that a lone write made at `place` (where {@link lonePlace} sent it) took `ms`. A place's
 * first write starts a run there (one first time — a cold file, code not yet compiled — would
 * stand for the place until its next run). A run's median, its first write left out, replaces
 * what the place had (it is old), so a place that became faster is taken again after its next run.
 */
export function noteLoneWrite(times: LoneWriteTimes, place: 'loop' | 'pool', ms: number): void {
  const time = Math.max(ms, MIN_TIMED_MS);
  if (place === 'loop') times.slowLoopWrites = time > LOOP_WRITE_MAX_MS ? times.slowLoopWrites + 1 : 0;
  if (times.probe) return noteProbeWrite(times, times.probe, time);
  const average = place === 'loop' ? times.loopMs : times.poolMs;
  if (average === undefined) {
    times.probe = { place, from: undefined, left: LONE_PROBE_RUN - 1, times: [] };
    return;
  }
  const before = lonePlace(times);
  const slowDisk = place === 'loop' && times.slowLoopWrites >= SLOW_LOOP_WRITES;
  setAverage(times, place, slowDisk ? Math.max(average, time) : averaged(average, time));
  const chosen = lonePlace(times);
  // The choice changed on the chosen place's own times: the other place's is old, time it soon.
  if (chosen !== before) restartProbes(times, LONE_PROBE_EVERY);
  if (++times.sinceProbe >= (loopTooSlow(times) ? SLOW_LOOP_PROBE_EVERY : times.probeEvery))
    times.probe = { place: other(chosen), from: chosen, left: LONE_PROBE_RUN, times: [] };
}

function restartProbes(times: LoneWriteTimes, every: number): void {
  times.sinceProbe = 0;
  times.probeEvery = every;
}

/** A probe run's write; at its end, the place's new time, and the next interval: doubled if the run confirmed the choice, else the first. */
function noteProbeWrite(times: LoneWriteTimes, probe: LoneProbeRun, time: number): void {
  if (probe.left < LONE_PROBE_RUN) probe.times.push(time);
  if (--probe.left > 0) return;
  setAverage(times, probe.place, medianOf(probe.times));
  times.probe = undefined;
  if (probe.from === undefined) return restartProbes(times, LONE_PROBE_EVERY);
  const confirmed = lonePlace(times) === probe.from;
  restartProbes(times, confirmed ? Math.min(times.probeEvery * 2, LONE_PROBE_EVERY_MAX) : LONE_PROBE_EVERY);
}
