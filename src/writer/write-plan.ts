import { indexDeferral, type RunIndex, type RunIndexEntry } from '../codec/run-index.js';
import { encodeBatchFile } from '../snapshot-io/batch-file.js';
import type { HeldBatch, HeldMember } from '../contract/held-batch.js';
import type { Profile } from '../contract/profile.js';
import type { CreateOp, ReplaceOp, WritePlan } from './ordered-write.js';
import { refOf, type GroupDraft, type HeadRewrite, type Planned } from './plan-group.js';
import { prunedKeys } from './prune-step.js';
import type { Head } from './state.js';
import type { WriterConfig } from './writer-config.js';

/** A batch file written by this group: several of its snapshots in one `batch_{first}_{last}.json` (the layout's `batchKey`). */
export interface BatchFileWrite {
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly members: HeldMember[];
}

/** What the executor gathered from storage before the plan is built (the plan itself reads nothing). */
export interface GroupFacts {
  /** The store's rate budget is low and the writer batches then. */
  readonly budgetLow: boolean;
  /** The head's still-held file that this group's snapshots join (held-batch.ts), if any. */
  readonly held: HeldBatch | undefined;
  /** `latest` as it will be stored (a single-artifact format keeps other tools' fields), if the group changes it. */
  readonly latestBytes: Uint8Array | undefined;
  /** History entries the per-run retention bound lets go with this group. */
  readonly prune: readonly RunIndexEntry[];
}

/** A group's write plan, and what the writer keeps of it once it is durable. */
export interface GroupWrite {
  readonly plan: WritePlan;
  readonly batchFile: BatchFileWrite | undefined;
  /** Index entries not yet in the stored index, this group's included. */
  readonly entries: RunIndexEntry[];
  /** The plan rewrites the index (then `entries` are in it). */
  readonly writeIndex: boolean;
  /** This group's history entries. */
  readonly written: RunIndexEntry[];
}

/** The writer's run as the plan needs it (read, never changed). */
export interface RunView<P> {
  readonly head: Head<P> | undefined;
  readonly unindexed: readonly RunIndexEntry[];
  readonly indexDoc: RunIndex | undefined;
  /** Entries the stored index lists; while it is unread (opened from `latest`), the run's length then. */
  readonly indexedCount: number;
  readonly lastSequence: number;
  readonly partsBySequence: ReadonlyMap<number, readonly string[]>;
}

/** True when a planned snapshot has a terminal status (the run ends with this group). */
export function endsRun<P>(profile: Profile<P>, planned: readonly Planned<P>[]): boolean {
  for (const p of planned) if (profile.isTerminal(p.draft.status)) return true;
  return false;
}

/** The bytes `latest` gets from this group, before other tools' fields are kept: the newest snapshot, else the rewritten head. */
export const latestBytesOf = <P>(group: GroupDraft<P>, headRewrite: HeadRewrite<P> | undefined): Uint8Array | undefined =>
  group.planned.at(-1)?.stored.bytes ?? headRewrite?.stored.bytes;

/** Members of a batch file with the head's document replaced by its rewrite. */
export const withRewrittenHead = (members: readonly HeldMember[], sequence: number, bytes: Uint8Array): HeldMember[] =>
  members.map((m) => (m.sequence === sequence ? { sequence: m.sequence, bytes } : m));

/** Index entries of the replaced file, pointed at the batch file that now holds their snapshots (each once). */
export function repointEntries(entries: readonly RunIndexEntry[], batch: HeldBatch): RunIndexEntry[] {
  const seen = new Set<string>();
  const out: RunIndexEntry[] = [];
  for (const e of entries) {
    if (e.file_path !== batch.replaced || seen.has(e.checkpoint_id)) continue;
    seen.add(e.checkpoint_id);
    out.push(Object.freeze({ ...e, file_path: batch.key }));
  }
  return out;
}

// Frozen: the index encoder then serializes each entry once, however often the index is rewritten.
const entryOf = <P>(p: Planned<P>, filePath: string): RunIndexEntry =>
  Object.freeze({
    sequence: p.draft.sequence,
    checkpoint_id: p.draft.id,
    trigger: p.draft.source,
    timestamp: p.draft.createdAt,
    file_path: filePath,
    status: p.draft.status,
  });

/**
 * Below the rate-limit floor, a group of two or more snapshots goes into one batch file (when
 * it fits); a held head's batch takes precedence. This stays in the engine: it is layout data
 * (any layout with a `batchKey`) and a store's budget, not one profile's rule.
 */
/** A critical trigger's checkpoint is in the group: it must not wait in a store's hold (phased-workflow-github.md priorities). */
export function hasCritical<P>(planned: readonly Planned<P>[]): boolean {
  for (const p of planned) if (p.draft.priority === 'critical') return true;
  return false;
}

function batchFileOf<P>(config: WriterConfig<P>, planned: readonly Planned<P>[], facts: GroupFacts): BatchFileWrite | undefined {
  if (facts.held) return { key: facts.held.key, bytes: facts.held.bytes, members: [...facts.held.members] };
  const { layout } = config;
  if (!(config.hasHistory && facts.budgetLow && planned.length >= 2 && layout.batchKey)) return undefined;
  const members = planned.map((p) => ({ sequence: p.draft.sequence, bytes: p.stored.bytes }));
  const bytes = encodeBatchFile(members);
  return bytes.length <= config.maxBytes
    ? { key: layout.batchKey(config.runId, planned[0]!.draft.sequence, planned.at(-1)!.draft.sequence), bytes, members }
    : undefined;
}

/** The writes of a head rewrite: its parts, and its history entry or batch file replaced in place (not with immutable history once a new snapshot follows). */
function headRewriteOps<P>(
  config: WriterConfig<P>,
  head: Head<P>,
  rewrite: HeadRewrite<P>,
  hasNewest: boolean,
  creates: CreateOp[],
  replaces: ReplaceOp[],
): void {
  if (config.immutableHistory && hasNewest) return;
  for (const part of rewrite.stored.parts) creates.push({ key: part.key, bytes: part.data });
  const loc = config.immutableHistory ? { kind: 'latest' as const } : rewrite.location;
  if (loc.kind === 'history') replaces.push({ key: loc.key, bytes: rewrite.stored.bytes, ifVersion: loc.version, chunk: config.dedup });
  if (loc.kind === 'batch')
    replaces.push({
      key: loc.key,
      bytes: encodeBatchFile(withRewrittenHead(loc.members, head.header.sequence, rewrite.stored.bytes)),
      ifVersion: loc.version,
    });
}

/** The creates of the new snapshots: their parts, and their history entries or batch file (setting each one's key). Latest-only profiles store the newest state alone. */
function snapshotOps<P>(
  config: WriterConfig<P>,
  planned: readonly Planned<P>[],
  batchFile: BatchFileWrite | undefined,
  creates: CreateOp[],
): void {
  const newest = planned.at(-1);
  for (const p of planned) {
    if (!config.hasHistory && p !== newest) continue;
    for (const part of p.stored.parts) creates.push({ key: part.key, bytes: part.data });
  }
  if (!config.hasHistory) return;
  if (batchFile) {
    creates.push({ key: batchFile.key, bytes: batchFile.bytes });
    for (const p of planned) p.key = batchFile.key;
    return;
  }
  for (const p of planned) {
    p.key = config.layout.historyKey!(refOf(config.runId, p.draft));
    creates.push(config.dedup ? { key: p.key, bytes: p.stored.bytes, chunk: true } : { key: p.key, bytes: p.stored.bytes });
  }
}

/** Index entries not yet stored once this group lands: held back ones, the held file's repointed, and this group's. */
function pendingEntries<P>(
  config: WriterConfig<P>,
  run: RunView<P>,
  planned: readonly Planned<P>[],
  written: RunIndexEntry[],
  held: HeldBatch | undefined,
): RunIndexEntry[] {
  const { unindexed } = run;
  if (held)
    return [
      ...unindexed.filter((e) => e.file_path !== held.replaced),
      ...repointEntries([...(run.indexDoc?.checkpoints ?? []), ...unindexed], held),
      ...written,
    ];
  if (unindexed.length === 0 && config.hasHistory) return written;
  const newest = planned.at(-1);
  return [...unindexed, ...(config.hasHistory ? written : newest ? [entryOf(newest, config.latestKey)] : [])];
}

/** Whether `entries` held-back index entries are as many as the index's cadence lets wait (see indexDeferral). */
export function indexDue<P>(config: WriterConfig<P>, run: Pick<RunView<P>, 'indexedCount' | 'lastSequence'>, entries: number): boolean {
  return (
    entries >= indexDeferral(run.indexedCount, config.autoRetention ? run.lastSequence : undefined) ||
    run.indexedCount + entries <= (config.profile.indexEveryCheckpointUpTo ?? 0)
  );
}

/**
 * Builds the write plan of a planned group, reading nothing: parts and history entries (or
 * one batch file), the head's rewrite, `latest`, the index when it is due, and the files
 * retention lets go.
 */
export function buildGroupWrite<P>(
  config: WriterConfig<P>,
  run: RunView<P>,
  group: GroupDraft<P>,
  headRewrite: HeadRewrite<P> | undefined,
  facts: GroupFacts,
): GroupWrite {
  const { planned } = group;
  const { held, prune } = facts;
  const creates: CreateOp[] = [];
  const replaces: ReplaceOp[] = [];
  const batchFile = batchFileOf(config, planned, facts);
  if (headRewrite && run.head) headRewriteOps(config, run.head, headRewrite, planned.length > 0, creates, replaces);
  snapshotOps(config, planned, batchFile, creates);
  const written: RunIndexEntry[] = [];
  if (config.hasHistory) for (const p of planned) written.push(entryOf(p, p.key));
  const entries = pendingEntries(config, run, planned, written, held);
  // A long run's index is rewritten every max(1, n/16) checkpoints (see indexDeferral; n counts
  // the run when it is pruned as it goes) once it lists more than the profile's
  // indexEveryCheckpointUpTo entries, and at once when the run ends or prunes;
  // held-back entries stay in `unindexed` until then.
  const writeIndex =
    config.indexKey !== undefined &&
    entries.length > 0 &&
    (!config.hasHistory ||
      prune.length > 0 ||
      held !== undefined ||
      indexDue(config, run, entries.length) ||
      endsRun(config.profile, planned));
  // Built member by member: object spreads in a literal cost more than the rest of the plan.
  const plan: { -readonly [K in keyof WritePlan]: WritePlan[K] } = { creates, replaces };
  if (hasCritical(planned)) plan.urgent = true;
  if (facts.latestBytes)
    plan.latest = config.dedup
      ? { key: config.latestKey, bytes: facts.latestBytes, chunk: true }
      : { key: config.latestKey, bytes: facts.latestBytes };
  if (writeIndex) {
    plan.index =
      prune.length > 0 || held
        ? { key: config.indexKey!, entries, remove: new Set([...prune.map((e) => e.file_path), ...(held ? [held.replaced] : [])]) }
        : { key: config.indexKey!, entries };
  }
  // With an atomic batch the pruned files go in the same commit (one durable commit per
  // checkpoint, not two); otherwise they are deleted after this plan is durable. The held
  // file a batch file took over goes in the same write.
  if (config.useAtomicBatch && (prune.length > 0 || held))
    plan.deletes = [...prunedKeys(prune, run.partsBySequence), ...(held ? [held.replaced] : [])];
  return { plan, batchFile, entries, writeIndex, written };
}
