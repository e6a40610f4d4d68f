/**
 * What the viewer shows, computed from a store through the same read paths the CLI uses
 * (one listing, decode-and-verify of every file, the resume planner, the retention
 * planner). Everything here is read-only except {@link applyRetentionPlan}. Results are
 * plain JSON for the page; no payload content is ever put in an error message.
 */
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { sha256Hex } from '../codec/sha256.js';
import { utf8Decode } from '../codec/utf8.js';
import type { Clock } from '../model/clock.js';
import { SNAPSHOT_ID_PATTERN } from '../model/ids.js';
import { isCheckpointError, type CheckpointError } from '../model/errors.js';
import type { Snapshot } from '../model/snapshot.js';
import type { Profile } from '../profiles/define-profile.js';
import { decodeStoredSnapshot } from '../profiles/read-snapshot.js';
import { collectRunFiles, type RunFiles } from '../profiles/run-files.js';
import { planResume } from '../resume/plan-resume.js';
import { applyRetention } from '../retention/apply.js';
import { buildInventory } from '../retention/inventory.js';
import { planRetention, type RetentionPlan } from '../retention/plan.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { mapLimit } from '../storage/map-limit.js';
import { loadEntry, loadRunSnapshots, type SnapshotRow } from '../cli/inspect.js';
import { diffValues, type ValueChange } from './diff.js';

/** The store the viewer shows. */
export interface ViewerSource {
  readonly storage: StorageAdapter;
  readonly profile: Profile<unknown>;
  readonly clock: Clock;
}

/** An error as the page shows it: a stable reason code and a sentence. */
export interface ErrorView {
  readonly reasonCode: string;
  readonly message: string;
}

const errorView = (err: CheckpointError): ErrorView => ({ reasonCode: err.reasonCode, message: err.message });

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

/** One snapshot on a run's timeline. */
export interface TimelineEntry {
  readonly key: string;
  readonly sequence: number | null;
  readonly id: string | null;
  readonly createdAt: string | null;
  readonly source: string | null;
  /** Triggers coalesced into the snapshot after `source`. */
  readonly coalesced: readonly string[];
  readonly status: string | null;
  readonly size: number;
  readonly compressed: boolean;
  readonly batched: boolean;
  /** Fired by the profile's heartbeat trigger. */
  readonly heartbeat: boolean;
  /** Why the file cannot be read, when it cannot. */
  readonly error: ErrorView | null;
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
    if (source.profile.isTerminal(plan.snapshot.status)) return { state: 'finished', status: plan.snapshot.status, sequence: plan.snapshot.sequence };
    return { state: 'resumable', at: plan.at, reason: plan.reason, eligible: plan.eligible, sequence: plan.snapshot.sequence };
  } catch (err) {
    if (isCheckpointError(err)) return { state: 'unresumable', error: errorView(err) };
    throw err;
  }
}

/** Every run of the store with its status, activity, size, lock holder and resumability. */
export async function listRunViews(source: ViewerSource, onListing?: (files: Awaited<ReturnType<typeof collectRunFiles>>) => void): Promise<RunView[]> {
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

async function runFiles(source: ViewerSource, runId: string): Promise<RunFiles | undefined> {
  source.profile.assertRunId(runId);
  return (await collectRunFiles(source.storage, source.profile, runId)).runs.get(runId);
}

const toEntry = (profile: Profile<unknown>) => (row: SnapshotRow): TimelineEntry => {
  const s = row.snapshot;
  const heartbeatSource = profile.heartbeat ? profile.heartbeat.source : undefined;
  return {
    key: row.key,
    sequence: s?.sequence ?? row.sequenceHint ?? null,
    id: s?.id ?? null,
    createdAt: s?.createdAt ?? null,
    source: s?.source ?? null,
    coalesced: s ? s.sourceDetails.map((d) => d.source) : [],
    status: s?.status ?? null,
    size: row.size,
    compressed: row.compressed,
    batched: row.batched,
    heartbeat: s !== undefined && s.source === heartbeatSource,
    error: row.error ? errorView(row.error) : null,
  };
};

/** A run's snapshots in ascending sequence, unreadable ones with their reason; `undefined` for an unknown run. */
export async function runTimeline(source: ViewerSource, runId: string): Promise<TimelineEntry[] | undefined> {
  const run = await runFiles(source, runId);
  if (!run) return undefined;
  return (await loadRunSnapshots(source.storage, source.profile, run)).map(toEntry(source.profile));
}

/** The creation time a `cp_<timestamp>_<suffix>` id carries (snapshot-lifecycle.md), as RFC 3339. */
export function timeFromSnapshotId(id: string | undefined): string | null {
  const m = id === undefined ? null : SNAPSHOT_ID_PATTERN.exec(id);
  if (!m) return null;
  const t = m[1]!;
  return `${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}T${t.slice(9, 11)}:${t.slice(11, 13)}:${t.slice(13, 15)}.${t.slice(15, 18)}Z`;
}

/** A timeline whose entries may still be skeletons (`pending`), built from the listing alone. */
export interface QuickTimeline {
  readonly complete: boolean;
  readonly snapshots: readonly (TimelineEntry & { readonly pending?: true })[];
}

/**
 * Timelines for a viewer: decoded entries are cached by key and version, so only new or
 * changed files are read again; `quick` answers at once from the listing — cached entries
 * whole, the others as skeletons with what their names carry (sequence, id, the time in a
 * `cp_<timestamp>` id, size) — while the full read goes on in the background. A long run
 * thus paints in the time of one listing, and fills in when its files are read.
 */
export function timelineCache(source: ViewerSource): {
  timeline(runId: string, quick: boolean): Promise<QuickTimeline | undefined>;
  /** A listing of the whole store just made (by the runs view), which a quick timeline may reuse for a few seconds. */
  rememberListing(files: Awaited<ReturnType<typeof collectRunFiles>>): void;
} {
  const cache = new Map<string, { version: string; entry: TimelineEntry }>();
  let listing: { at: number; files: Awaited<ReturnType<typeof collectRunFiles>> } | undefined;
  const LISTING_REUSE_MS = 5000;
  const loading = new Map<string, Promise<TimelineEntry[] | undefined>>();
  const full = (runId: string): Promise<TimelineEntry[] | undefined> => {
    let p = loading.get(runId);
    if (!p) {
      p = (async () => {
        const run = await runFiles(source, runId);
        if (!run) return undefined;
        // Only files that are new or changed since they were read are read again.
        const hit = (e: { key: string; version: string }): TimelineEntry | undefined => {
          const c = cache.get(e.key);
          return c && c.version === e.version ? c.entry : undefined;
        };
        const singles = run.history.length > 0 || run.batches.length > 0 || !run.latest ? run.history : [run.latest];
        const cached = singles.map(hit).filter((e): e is TimelineEntry => e !== undefined);
        const toRead = singles.filter((e) => !hit(e));
        const fresh = (await loadRunSnapshots(source.storage, source.profile, { ...run, history: toRead, latest: undefined })).map(
          toEntry(source.profile),
        );
        const versions = new Map(toRead.map((e) => [e.key, e.version]));
        for (const e of fresh) {
          const version = versions.get(e.key);
          if (version !== undefined) cache.set(e.key, { version, entry: e });
        }
        return [...cached, ...fresh].sort(bySequenceThenTime);
      })().finally(() => loading.delete(runId));
      loading.set(runId, p);
    }
    return p;
  };
  return {
    rememberListing(files) {
      listing = { at: Date.now(), files };
    },
    async timeline(runId, quick) {
      if (!quick) {
        const entries = await full(runId);
        return entries && { complete: true, snapshots: entries };
      }
      // The user came from the runs view a moment ago: its listing is fresh enough for a first paint.
      const fresh = listing && Date.now() - listing.at < LISTING_REUSE_MS ? listing.files.runs.get(runId) : undefined;
      if (fresh) source.profile.assertRunId(runId);
      const run = fresh ?? (await runFiles(source, runId));
      if (!run) return undefined;
      const singles = run.history.length > 0 || run.batches.length > 0 || !run.latest ? run.history : [run.latest];
      const cached = singles.map((e) => {
        const hit = cache.get(e.key);
        if (hit && hit.version === e.version) return hit.entry;
        const id = e.info.snapshotId ?? null;
        return { key: e.key, sequence: e.info.sequence ?? null, id, createdAt: timeFromSnapshotId(id ?? undefined), source: e.info.source ?? null, coalesced: [], status: null, size: e.size, compressed: e.info.compressed, batched: false, heartbeat: false, error: null, pending: true as const };
      });
      const complete = run.batches.length === 0 && cached.every((e) => !('pending' in e));
      if (complete) return { complete, snapshots: cached.sort(bySequenceThenTime) };
      // After this answer is on its way: the listing alone is what the first paint waits for.
      setImmediate(() => void full(runId).catch(() => undefined));
      return { complete: false, snapshots: cached.sort(bySequenceThenTime) };
    },
  };
}

function bySequenceThenTime(a: TimelineEntry, b: TimelineEntry): number {
  if (a.sequence !== null && b.sequence !== null && a.sequence !== b.sequence) return a.sequence - b.sequence;
  return (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** One snapshot of a run by sequence (`"12"`), id, or `latest`; `undefined` when there is none. */
export async function findSnapshot(
  source: ViewerSource,
  runId: string,
  ref: string,
  timelines?: ReturnType<typeof timelineCache>,
): Promise<Snapshot<unknown> | undefined> {
  if (timelines && ref !== 'latest') {
    // The run's (cached) timeline says which file holds it: one read, not the whole run.
    const wanted = /^[0-9]+$/.test(ref) ? Number(ref) : undefined;
    const entry = (await timelines.timeline(runId, false))?.snapshots.find((e) => !e.error && (e.id === ref || e.sequence === wanted));
    if (entry && !entry.batched) {
      const stored = await source.storage.get(entry.key);
      if (stored) return decodeStoredSnapshot(source.storage, source.profile, entry.key, stored.bytes);
    }
  }
  const run = await runFiles(source, runId);
  if (!run) return undefined;
  if (ref === 'latest') {
    const row = run.latest ? await loadEntry(source.storage, source.profile, run.latest) : undefined;
    if (row?.snapshot) return row.snapshot;
  }
  const rows = await loadRunSnapshots(source.storage, source.profile, run);
  const wanted = /^[0-9]+$/.test(ref) ? Number(ref) : undefined;
  const found = ref === 'latest' ? rows.at(-1)?.snapshot : rows.find((r) => r.snapshot && (r.snapshot.id === ref || r.snapshot.sequence === wanted))?.snapshot;
  if (found || wanted === undefined || !run.latest) return found;
  // A profile without history keeps its one snapshot in latest.
  const latest = await loadEntry(source.storage, source.profile, run.latest);
  return latest.snapshot?.sequence === wanted ? latest.snapshot : undefined;
}

/** The difference between two snapshots of a run: every added, removed and changed path. */
export function diffSnapshots(a: Snapshot<unknown>, b: Snapshot<unknown>): ValueChange[] {
  const envelope = (s: Snapshot<unknown>): unknown => JSON.parse(canonicalJson(s as unknown as Parameters<typeof canonicalJson>[0])) as unknown;
  return diffValues(envelope(a), envelope(b));
}

/** The findings of checking one run's files, as `savepoint verify` reports them. */
export interface VerifyView {
  readonly runId: string;
  readonly checked: number;
  readonly problems: readonly (ErrorView & { readonly key: string })[];
}

/** Decodes and verifies every snapshot file of a run (history, batches, latest). */
export async function verifyRun(source: ViewerSource, runId: string): Promise<VerifyView | undefined> {
  const run = await runFiles(source, runId);
  if (!run) return undefined;
  const rows = await loadRunSnapshots(source.storage, source.profile, run);
  const latest = run.latest && (run.history.length > 0 || run.batches.length > 0) ? [await loadEntry(source.storage, source.profile, run.latest)] : [];
  const all = [...rows, ...latest];
  return {
    runId,
    checked: all.length,
    problems: all.filter((r) => r.error).map((r) => ({ key: r.key, ...errorView(r.error!) })),
  };
}

/** Where a run would resume and why, or why it cannot. */
export async function resumeView(source: ViewerSource, runId: string): Promise<Record<string, unknown>> {
  source.profile.assertRunId(runId);
  try {
    const plan = await planResume({ storage: source.storage, profile: source.profile, runId, clock: source.clock });
    return {
      ok: true,
      at: plan.at,
      reason: plan.reason,
      explanation: plan.explanation,
      eligible: plan.eligible,
      completed: plan.completed,
      remaining: plan.remaining,
      sequence: plan.snapshot.sequence,
      snapshotId: plan.snapshot.id,
      status: plan.snapshot.status,
      source: plan.source,
      nextSequence: plan.nextSequence,
      ageMs: plan.ageMs,
      warnings: plan.warnings.map((w) => ({ code: w.code, message: w.message })),
      skipped: plan.skipped.map((s) => ({ key: s.key, kind: s.kind, reasonCode: s.reasonCode, message: s.message })),
    };
  } catch (err) {
    if (isCheckpointError(err)) return { ok: false, error: errorView(err) };
    throw err;
  }
}

/** One snapshot's retention decision. */
export interface RetentionDecisionView {
  readonly sequence: number;
  readonly id: string;
  readonly action: 'keep' | 'compress' | 'summarize' | 'delete';
  readonly reasons: readonly string[];
}

/** A retention dry run as the page draws it. */
export interface RetentionView {
  readonly policy: string;
  readonly rules: readonly string[];
  /** Identifies this exact plan: applying needs it, so what is applied is what was shown. */
  readonly digest: string;
  readonly runs: readonly { readonly runId: string; readonly tier: string | null; readonly counts: Readonly<Record<string, number>>; readonly deleteRun: boolean }[];
  /** Decisions of the asked run's snapshots (all runs' counts are in `runs`). */
  readonly decisions: readonly RetentionDecisionView[];
  readonly operations: number;
}

async function currentPlan(source: ViewerSource): Promise<{ plan: RetentionPlan; digest: string }> {
  const policy = source.profile.retention ?? { name: 'none', rules: [] };
  const inventory = await buildInventory({ storage: source.storage, profile: source.profile });
  const plan = planRetention(inventory, policy, source.clock.now());
  // The digest covers what the plan would do, not when it was made.
  const digest = await sha256Hex(canonicalJson(plan.operations as unknown as Parameters<typeof canonicalJson>[0]));
  return { plan, digest };
}

/** The profile's retention policy planned over the whole store, with one run's decisions. */
export async function retentionView(source: ViewerSource, runId?: string): Promise<RetentionView> {
  if (runId !== undefined) source.profile.assertRunId(runId);
  const { plan, digest } = await currentPlan(source);
  return {
    policy: plan.policy,
    rules: plan.rules,
    digest,
    runs: plan.runs.map((r) => ({ runId: r.runId, tier: r.tier ?? null, counts: r.counts, deleteRun: r.deleteRun })),
    decisions: plan.snapshots
      .filter((d) => d.snapshot.runId === runId)
      .map((d) => ({ sequence: d.snapshot.sequence, id: d.snapshot.id, action: d.action, reasons: d.reasons })),
    operations: plan.operations.length,
  };
}

/** Applies the current retention plan if it is still the one with `digest`; `undefined` when it changed. */
export async function applyRetentionPlan(source: ViewerSource, digest: string): Promise<Record<string, unknown> | undefined> {
  const { plan, digest: now } = await currentPlan(source);
  if (now !== digest) return undefined;
  const report = await applyRetention({ storage: source.storage, profile: source.profile, plan, clock: source.clock });
  return { applied: plan.operations.length, report: JSON.parse(JSON.stringify(report)) as unknown };
}
