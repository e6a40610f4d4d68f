import { createLane, type Lane } from './lane.js';

/*
 * The descriptor budget: how many file descriptors the fs store holds at once, whatever the
 * size of a batch. The process's limit (`ulimit -n`: 1024 on most Linux systems, 256 on
 * macOS) is shared by everything in it, so a batch of thousands of puts (a large document
 * stored as content chunks) must not hold a descriptor per put. Small batches stay on the
 * fast path (a descriptor kept from a temp file's creation to its rename); past the budget,
 * descriptors are opened for a short sequence of calls and closed, a few at a time.
 */

/** A batch's puts past this many get closed temp files (smaller batches, the common case, keep the fast path). */
export const OPEN_TEMPS_PER_BATCH = 64;
/**
 * Temp files of planned journal puts left open from their creation to their rename, at most, in
 * the whole process: a safety net for many batches at once (eight busy runs, whose applies lag
 * behind their commits, hold about a hundred).
 */
export const MAX_OPEN_TEMPS = 256;
/** Directories a hold of the journal lock keeps open for its groups (walks), past which a batch's other directories are opened per use. */
export const MAX_CACHED_DIRS = 64;
/** Short-lived descriptors (open, a few calls, close) in flight at once, at most, in the whole process. */
const SHORT_LIVED = 16;
/** Direct-mode puts and deletes in flight at once, at most, in the whole process (each holds its directories, a temp file and a lock). */
const DIRECT_WRITES = 32;

let openTemps = 0;
/** The temp files counted in `openTemps` (a reservation not yet given its file is counted without one). */
const counted = new WeakSet<object>();
/** How many planned temp files hold a descriptor now (tests: none once every store is closed). */
export const openTempDescriptors = (): number => openTemps;
/** Reserves a place for one more open temp file; false when the process holds MAX_OPEN_TEMPS. */
export function reserveOpenTemp(): boolean {
  if (openTemps >= MAX_OPEN_TEMPS) return false;
  openTemps++;
  return true;
}
/** The reservation went unused (no temp file came of it). */
export const unreserveOpenTemp = (): void => void openTemps--;
/** The temp file a reservation was used for: {@link releaseOpenTemp} ends its count. */
export const holdsReservation = (temp: object): void => void counted.add(temp);
/** A counted temp file's descriptor was closed, kept for the checkpoint or given back to the pool (once per file; no-op for others). */
export function releaseOpenTemp(temp: object | undefined): void {
  if (temp && counted.delete(temp)) openTemps--;
}

let shortLived: Lane | undefined;
/** Runs `call` (an open, a few calls on the descriptor, its close) within the process's short-lived descriptors. */
export function withDescriptor<T>(call: () => Promise<T>): Promise<T> {
  return (shortLived ??= createLane(SHORT_LIVED))(call);
}

let direct: Lane | undefined;
/** Runs a direct-mode put or delete within the process's bound on them (see {@link DIRECT_WRITES}). */
export function directWrite<T>(call: () => Promise<T>): Promise<T> {
  return (direct ??= createLane(DIRECT_WRITES))(call);
}
