/** The runs view: each run's status, activity, size, lock holder and resumability. */
import { parseJson } from '../codec/canonical-json.js';
import { utf8Decode } from '../codec/utf8.js';
import { isCheckpointError } from '../contract/errors.js';
import type { Snapshot } from '../contract/snapshot.js';
import { collectRunFiles, type RunFiles } from '../snapshot-io/run-files.js';
import { planResume } from '../resume/plan-resume.js';
import { mapLimit } from '../storage/map-limit.js';
import { loadEntry } from '../runs/inspect.js';
import { errorView, type ErrorView, type ViewerSource } from './source.js';

/** Who holds a run's lock, as far as its lock file says. */
export interface LockView {
  readonly pid: number | null;
  readonly hostname: string | null;
  readonly acquiredAt: string | null;
  /** Epoch ms the lease ends. */
  readonly leaseUntil: number | null;
  /** The lease has not ended (a writer may be at work). */
  readonly live: boolean;
}

/** Whether a run can be resumed, and where. */
export type ResumabilityView =
  | { readonly state: 'resumable'; readonly at: string; readonly reason: string; readonly eligible: boolean; readonly sequence: number }
  | { readonly state: 'finished'; readonly status: string; readonly sequence: number }
  | { readonly state: 'unresumable'; readonly error: ErrorView };

/** One row of the runs view. */
export interface RunView {
  readonly runId: string;
  readonly status: string | null;
  readonly terminal: boolean;
  readonly sequence: number | null;
  readonly files: number;
  readonly lastActivity: string | null;
  readonly bytes: number;
  readonly lock: LockView | null;
  readonly resumable: ResumabilityView;
}

function fileCount(run: RunFiles): number {
  return run.history.length + run.batches.length + run.parts.length + [run.latest, run.index, run.lock, run.summary].filter(Boolean).length;
}

async function readLock(source: ViewerSource, run: RunFiles): Promise<LockView | null> {
  if (!run.lock) return null;
  try {
    const stored = await source.storage.get(run.lock.key);
    if (!stored) return null;
    const doc = parseJson(utf8Decode(stored.bytes, run.lock.key), run.lock.key);
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return null;
    const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
    const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
    const leaseUntil = num(doc.lease_until);
    return {
      pid: num(doc.pid),
      hostname: str(doc.hostname),
      acquiredAt: str(doc.acquired_at),
      leaseUntil,
      live: leaseUntil !== null && leaseUntil > source.clock.now(),
    };
  } catch {
    // An unreadable lock is verify's finding; the runs view just shows no holder.
    return null;
  }
}

async function resumability(source: ViewerSource, runId: string, latest: Snapshot<unknown> | undefined): Promise<ResumabilityView> {
  if (latest && source.profile.isTerminal(latest.status)) return { state: 'finished', status: latest.status, sequence: latest.sequence };
  try {
    const plan = await planResume({ storage: source.storage, profile: source.profile, runId, clock: source.clock });
    if (source.profile.isTerminal(plan.snapshot.status))
      return { state: 'finished', status: plan.snapshot.status, sequence: plan.snapshot.sequence };
    return { state: 'resumable', at: plan.at, reason: plan.reason, eligible: plan.eligible, sequence: plan.snapshot.sequence };
  } catch (err) {
    if (isCheckpointError(err)) return { state: 'unresumable', error: errorView(err) };
    throw err;
  }
}

/** Every run of the store with its status, activity, size, lock holder and resumability. */
export async function listRunViews(
  source: ViewerSource,
  onListing?: (files: Awaited<ReturnType<typeof collectRunFiles>>) => void,
): Promise<RunView[]> {
  const files = await collectRunFiles(source.storage, source.profile);
  onListing?.(files);
  return mapLimit([...files.runs.values()], 8, async (run): Promise<RunView> => {
    const latestRow = run.latest ? await loadEntry(source.storage, source.profile, run.latest) : undefined;
    const latest = latestRow?.snapshot;
    return {
      runId: run.runId,
      status: latest?.status ?? null,
      terminal: latest ? source.profile.isTerminal(latest.status) : false,
      sequence: latest?.sequence ?? null,
      files: fileCount(run),
      lastActivity: latest?.createdAt ?? null,
      bytes: run.bytes,
      lock: await readLock(source, run),
      resumable: await resumability(source, run.runId, latest),
    };
  });
}
