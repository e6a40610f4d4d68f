/**
 * Where a lone group's write is made (pure: no I/O, no clock): on the event loop or on libuv's
 * pool, whichever returned sooner lately. A write on the loop skips the pool's two hand-offs
 * between threads; but under CPU contention a loop woken by the disk may wait for a core longer
 * than the pool's hand-off takes, and on a slow disk it would stall every other callback of the
 * process. So both places stay timed: the chosen one by every write made there, the other by a
 * short run of probes now and then, rarer while they keep confirming the loop.
 */

/**
 * How long lone groups' writes took lately on the event loop and on the pool (geometric moving
 * averages in ms, from the call to the moment the loop goes on; undefined: not timed yet), how
 * many lone groups went the faster way since the last probe run, how many make the next one due,
 * and the run under way.
 */
export interface LoneWriteTimes {
  loopMs: number | undefined;
  poolMs: number | undefined;
  sinceProbe: number;
  probeEvery: number;
  probe: LoneProbeRun | undefined;
}

/** A run of lone groups sent to `place`: the choice before it (none for a place's first run), how many are left, the sum of their times' logarithms. */
export interface LoneProbeRun {
  readonly place: 'loop' | 'pool';
  readonly from: 'loop' | 'pool' | undefined;
  left: number;
  logSum: number;
}

/** How many lone groups go the faster way between two probe runs the other way, at first and whenever the choice changed. */
export const LONE_PROBE_EVERY = 64;
/** The longest interval between probe runs of the pool: each that confirms the loop doubles it, up to this. */
export const LONE_PROBE_EVERY_MAX = 1024;
/** How many lone groups a probe run sends the other way (its first only moves there: not timed). */
export const LONE_PROBE_RUN = 4;
/** The weight of the newest time in a moving average. */
const LONE_TIME_WEIGHT = 0.25;
/** Times below this count as this (a clock's resolution; never 0 in a geometric average). */
const MIN_TIMED_MS = 0.001;
/**
 * Lone writes on the loop averaging longer than this go to the pool whatever the pool takes: a
 * slow disk (a spinning one, a network volume) would stall every other callback of the process
 * for each write. So does a run's loop write over it, its first too (a run is where the loop is
 * tried: one such write ends it), and any loop write over {@link LOOP_WRITE_STALL_MS}.
 */
export const LOOP_WRITE_MAX_MS = 2;
/** A loop write this long leaves the loop at once, whatever its average: a disk that stalls now and then is not kept on the loop by its typical write. */
export const LOOP_WRITE_STALL_MS = 20;
/** How many lone groups go to the pool before the loop, left for its slowness, is tried again (a place's first run aside: then {@link LONE_PROBE_EVERY}). */
export const SLOW_LOOP_PROBE_EVERY = LONE_PROBE_EVERY_MAX;

/** Nothing timed yet: the first lone groups go to the loop, then to the pool, a run each. */
export const untimedLoneWrites = (): LoneWriteTimes => ({
  loopMs: undefined,
  poolMs: undefined,
  sinceProbe: 0,
  probeEvery: LONE_PROBE_EVERY,
  probe: undefined,
});

const loopTooSlow = (times: Readonly<LoneWriteTimes>): boolean => times.loopMs !== undefined && times.loopMs > LOOP_WRITE_MAX_MS;

/**
 * Where the next lone group's write is made: where a probe run sends it; a place not timed yet
 * (the loop first, then the pool); else where lone writes returned sooner lately, never the loop
 * while its writes average over {@link LOOP_WRITE_MAX_MS}.
 */
export function lonePlace(times: Readonly<LoneWriteTimes>): 'loop' | 'pool' {
  if (times.probe) return times.probe.place;
  if (times.loopMs === undefined) return 'loop';
  if (times.poolMs === undefined || loopTooSlow(times)) return 'pool';
  return times.loopMs <= times.poolMs ? 'loop' : 'pool';
}

const other = (place: 'loop' | 'pool'): 'loop' | 'pool' => (place === 'loop' ? 'pool' : 'loop');

/** A geometric moving average: a write's time has a long tail on a busy disk, and the typical write is what a thread waits for. */
const averaged = (before: number, ms: number): number => before * (ms / before) ** LONE_TIME_WEIGHT;

function setTime(times: LoneWriteTimes, place: 'loop' | 'pool', ms: number): void {
  if (place === 'loop') times.loopMs = ms;
  else times.poolMs = ms;
}

/**
 * Notes that a lone write made at `place` (where {@link lonePlace} sent it) took `ms`. A place's
 * first write starts a run there (one first time — a cold file, code not yet compiled — would
 * stand for the place until its next run). A run's times, its first write left out, replace what
 * the place had (it is old), so a place that became faster is taken again after its next run.
 */
export function noteLoneWrite(times: LoneWriteTimes, place: 'loop' | 'pool', ms: number): void {
  const time = Math.max(ms, MIN_TIMED_MS);
  // The loop's first write starts its first run: it counts as in it.
  const inLoopRun = times.probe?.place === 'loop' || times.loopMs === undefined;
  if (place === 'loop' && (time > LOOP_WRITE_STALL_MS || (inLoopRun && time > LOOP_WRITE_MAX_MS))) return leaveLoop(times, time);
  if (times.probe) return noteProbeWrite(times, times.probe, time);
  const before = place === 'loop' ? times.loopMs : times.poolMs;
  if (before === undefined) {
    times.probe = { place, from: undefined, left: LONE_PROBE_RUN - 1, logSum: 0 };
    return;
  }
  const chosenBefore = lonePlace(times);
  setTime(times, place, averaged(before, time));
  const chosen = lonePlace(times);
  // The choice changed on the chosen place's own times: the other place's is old, time it soon (a loop left for its slowness, rarely).
  if (chosen !== chosenBefore) restartProbes(times, loopTooSlow(times) ? SLOW_LOOP_PROBE_EVERY : LONE_PROBE_EVERY);
  if (++times.sinceProbe >= times.probeEvery) times.probe = { place: other(chosen), from: chosen, left: LONE_PROBE_RUN, logSum: 0 };
}

/**
 * A loop write too long (see {@link LOOP_WRITE_MAX_MS}): the loop is left at once, a run there
 * ended, its time this write's. It is tried again after {@link SLOW_LOOP_PROBE_EVERY} lone
 * groups, or {@link LONE_PROBE_EVERY} when this was the loop's first run (a cold file's first write).
 */
function leaveLoop(times: LoneWriteTimes, time: number): void {
  const firstRun = times.loopMs === undefined || (times.probe?.place === 'loop' && times.probe.from === undefined);
  times.loopMs = time;
  times.probe = undefined;
  restartProbes(times, firstRun ? LONE_PROBE_EVERY : SLOW_LOOP_PROBE_EVERY);
}

function restartProbes(times: LoneWriteTimes, every: number): void {
  times.sinceProbe = 0;
  times.probeEvery = every;
}

/**
 * A probe run's write; at its end, the place's new time (the geometric mean of the run's timed
 * writes) and the next interval: doubled if the run confirmed the loop, else the first. Runs
 * that confirm the pool do not grow rarer: the loop is left when its own writes were slower (a
 * loaded machine), and found faster again only by a run.
 */
function noteProbeWrite(times: LoneWriteTimes, probe: LoneProbeRun, time: number): void {
  if (probe.left <= LONE_PROBE_RUN - 1) probe.logSum += Math.log(time);
  if (--probe.left > 0) return;
  setTime(times, probe.place, Math.exp(probe.logSum / (LONE_PROBE_RUN - 1)));
  times.probe = undefined;
  if (probe.from === undefined) return restartProbes(times, LONE_PROBE_EVERY);
  if (loopTooSlow(times)) return restartProbes(times, SLOW_LOOP_PROBE_EVERY);
  const loopConfirmed = probe.from === 'loop' && lonePlace(times) === 'loop';
  restartProbes(times, loopConfirmed ? Math.min(times.probeEvery * 2, LONE_PROBE_EVERY_MAX) : LONE_PROBE_EVERY);
}
