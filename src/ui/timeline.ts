/**
 * A run's timeline: its snapshots in sequence, read through the same decode-and-verify path
 * as the CLI, cached by key and version; and single snapshots and diffs found through it.
 */
import { SNAPSHOT_ID_PATTERN } from '../contract/ids.js';
import type { Snapshot } from '../contract/snapshot.js';
import type { Profile } from '../contract/profile.js';
import { decodeStoredSnapshot } from '../snapshot-io/read-snapshot.js';
import { collectRunFiles } from '../snapshot-io/run-files.js';
import { loadEntry, loadRunSnapshots, type SnapshotRow } from '../runs/inspect.js';
import { errorView, runFiles, type ErrorView, type ViewerSource } from './source.js';
import { parentCheckpointOf } from '../langgraph/forks.js';

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
  /** A LangGraph checkpoint's parent checkpoint id (profile langgraph), so the page can list a checkpoint's children. */
  readonly parent?: string | null;
}

/** Records an entry's file carries for earlier snapshots (`coalesced_into`, immutable history), by entry. */
const carriedBy = new WeakMap<TimelineEntry, readonly { readonly into: string; readonly source: string }[]>();

/** Entries with the triggers later entries carry for them added to their `coalesced` (as `savepoint ls`). */
function withCarried(entries: TimelineEntry[]): TimelineEntry[] {
  const extra = new Map<string, string[]>();
  for (const e of entries) for (const c of carriedBy.get(e) ?? []) extra.set(c.into, [...(extra.get(c.into) ?? []), c.source]);
  if (extra.size === 0) return entries;
  return entries.map((e) => (e.id !== null && extra.has(e.id) ? { ...e, coalesced: [...e.coalesced, ...extra.get(e.id)!] } : e));
}

const toEntry =
  (profile: Profile<unknown>) =>
  (row: SnapshotRow): TimelineEntry => {
    const s = row.snapshot;
    const entry = entryOf(profile, row);
    const carried = s
      ? s.sourceDetails.flatMap((d) =>
          d.coalesced_into !== undefined && d.coalesced_into !== s.id ? [{ into: d.coalesced_into, source: d.source }] : [],
        )
      : [];
    if (carried.length > 0) carriedBy.set(entry, carried);
    return entry;
  };

function entryOf(profile: Profile<unknown>, row: SnapshotRow): TimelineEntry {
  const s = row.snapshot;
  const heartbeatSource = profile.heartbeat ? profile.heartbeat.source : undefined;
  return {
    key: row.key,
    sequence: s?.sequence ?? row.sequenceHint ?? null,
    id: s?.id ?? null,
    createdAt: s?.createdAt ?? null,
    source: s?.source ?? null,
    coalesced: s ? s.sourceDetails.filter((d) => d.coalesced_into === undefined).map((d) => d.source) : [],
    status: s?.status ?? null,
    size: row.size,
    compressed: row.compressed,
    batched: row.batched,
    heartbeat: s !== undefined && s.source === heartbeatSource,
    error: row.error ? errorView(row.error) : null,
    ...(s && profile.name === 'langgraph' ? { parent: parentCheckpointOf(s) } : {}),
  };
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
        return withCarried([...cached, ...fresh].sort(bySequenceThenTime));
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
        return {
          key: e.key,
          sequence: e.info.sequence ?? null,
          id,
          createdAt: timeFromSnapshotId(id ?? undefined),
          source: e.info.source ?? null,
          coalesced: [],
          status: null,
          size: e.size,
          compressed: e.info.compressed,
          batched: false,
          heartbeat: false,
          error: null,
          pending: true as const,
        };
      });
      const complete = run.batches.length === 0 && cached.every((e) => !('pending' in e));
      if (complete) return { complete, snapshots: withCarried(cached.sort(bySequenceThenTime)) };
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
  const found =
    ref === 'latest'
      ? rows.at(-1)?.snapshot
      : rows.find((r) => r.snapshot && (r.snapshot.id === ref || r.snapshot.sequence === wanted))?.snapshot;
  if (found) return found;
  // An encrypted store opened without its key cannot tell which snapshot a file holds: say so, not "not found".
  const locked = rows.find((r) => r.error?.reasonCode === 'checkpoint_encryption_key_missing')?.error;
  if (locked) throw locked;
  if (wanted === undefined || !run.latest) return undefined;
  // A profile without history keeps its one snapshot in latest.
  const latest = await loadEntry(source.storage, source.profile, run.latest);
  return latest.snapshot?.sequence === wanted ? latest.snapshot : undefined;
}
