import { CheckpointError, toCheckpointError } from '../contract/errors.js';
import { appliedOf, rateBudgetOf } from '../contract/buffered-storage.js';
import type { HeldBatch } from '../contract/held-batch.js';
import { acknowledgeGroup } from './acknowledge-group.js';
import { planPrune } from './auto-retention.js';
import { openWithRetry } from './open-run.js';
import { executeWrite, type WritePlan, type WriteReport } from './ordered-write.js';
import type { RunIndexEntry } from '../codec/run-index.js';
import { finishDrafts, newGroupDraft, planJob, type GroupDraft, type HeadRewrite } from './plan-group.js';
import { prunable } from './prune-step.js';
import { retryAfterFirst } from './retry.js';
import { failure, type Job, type WriterState } from './state.js';
import { buildGroupWrite, hasCritical, latestBytesOf, type GroupFacts, type RunView } from './write-plan.js';

/**
 * The group commit's executor: opens the run when needed, plans the group (plan-group.ts),
 * gathers what the plan needs from storage, builds the write plan (write-plan.ts), stores
 * it in order under the lease, and acknowledges (acknowledge-group.ts).
 */

/** One attempt at storing a plan, fenced by the run lease when there is one. */
export function storePlan<P>(state: WriterState<P>, plan: WritePlan, through: number): Promise<WriteReport> {
  const { storage, runId, useAtomicBatch } = state.config;
  return state.lock
    ? state.lock.fenced(through, (fence) => executeWrite(storage, runId, plan, state.index, state.now, useAtomicBatch, fence))
    : executeWrite(storage, runId, plan, state.index, state.now, useAtomicBatch);
}

/** Awaited one at a time, checkpoints below the floor join the head's file while the store still holds it (profiles/held-batch.ts). */
function joinHeld<P>(
  state: WriterState<P>,
  group: GroupDraft<P>,
  headRewrite: HeadRewrite<P> | undefined,
  budgetLow: boolean,
): Promise<HeldBatch | undefined> | undefined {
  const { config, head } = state;
  const { layout, profile } = config;
  const loc = head?.location;
  if (!(config.hasHistory && budgetLow && layout.batchKey && config.useAtomicBatch && !headRewrite && head && group.planned.length > 0))
    return undefined;
  // A critical checkpoint goes at once in its own commit: it does not join a file the store still holds.
  if (hasCritical(group.planned)) return undefined;
  if (!profile.joinHeldHead || !loc || (loc.kind !== 'history' && loc.kind !== 'batch')) return undefined;
  const added = group.planned.map((p) => ({ sequence: p.draft.sequence, bytes: p.stored.bytes }));
  const held = {
    sequence: head.header.sequence,
    key: loc.key,
    version: loc.version,
    ...(loc.kind === 'batch' ? { members: loc.members } : {}),
  };
  return profile.joinHeldHead(config.storage, layout.batchKey, config.runId, held, added, config.maxBytes);
}

/**
 * What the plan needs from storage, read in this order: the held head, the `latest` being
 * replaced, the preserved runs. Without a read to make, no promise.
 */
function gatherFacts<P>(
  state: WriterState<P>,
  group: GroupDraft<P>,
  headRewrite: HeadRewrite<P> | undefined,
): GroupFacts | Promise<GroupFacts> {
  const { config } = state;
  const budgetLow = config.batchWhenLow && rateBudgetOf(config.storage)?.low === true;
  const joining = joinHeld(state, group, headRewrite, budgetLow);
  const latestBytes = latestBytesOf(group, headRewrite);
  const candidates = config.autoRetention && group.planned.length > 0 ? planPrune(state.history, config.autoRetention) : [];
  if (!joining && !(latestBytes && config.profile.document.keepForeignFields) && candidates.length === 0)
    return { budgetLow, held: undefined, latestBytes, prune: candidates };
  return readFacts(state, budgetLow, joining, latestBytes, candidates);
}

async function readFacts<P>(
  state: WriterState<P>,
  budgetLow: boolean,
  joining: Promise<HeldBatch | undefined> | undefined,
  latestBytes: Uint8Array | undefined,
  candidates: RunIndexEntry[],
): Promise<GroupFacts> {
  const { config } = state;
  const held = joining ? await joining : undefined;
  // A single-artifact format keeps what other tools wrote in the file it replaces (one read, only for such formats).
  const keepForeign = config.profile.document.keepForeignFields;
  if (latestBytes && keepForeign) {
    const previous = await config.storage.get(config.latestKey);
    if (previous) latestBytes = await keepForeign(previous.bytes, latestBytes);
  }
  const prune = candidates.length > 0 ? await prunable(state, candidates) : candidates;
  return { budgetLow, held, latestBytes, prune };
}

/** Commits one group: every job queued while the previous group was in flight. */
export async function commitGroup<P>(state: WriterState<P>, queued: Job<P>[]): Promise<void> {
  const jobs = queued.length === 1 && queued[0]!.riders.length === 0 ? queued : queued.flatMap((j) => [j, ...j.riders]);
  try {
    // Open (or recover) only when needed: an await costs a microtask and a promise per checkpoint.
    if (!state.opened || state.needsRecovery) await openWithRetry(state);
  } catch (raw) {
    const result = failure(state, toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not open the run'), 'open');
    for (const job of jobs) job.resolve(result);
    return;
  }
  // Plan, in call order: a job that cannot be encoded fails alone, a new snapshot re-arms the heartbeat.
  const group = newGroupDraft<P>(state.nextSequence);
  for (const job of jobs) {
    const planning = planJob(state.config, state.head, group, job);
    const step = planning instanceof Promise ? await planning : planning;
    if (step.kind === 'rejected') job.resolve(failure(state, step.error, 'validate'));
    else if (step.kind === 'planned') state.heartbeat.reset(step.planned.state.status === state.config.activeStatus);
  }
  state.nextSequence = group.nextSequence;
  if (group.planned.length === 0 && group.intoHead.length === 0) return;
  try {
    const finishing = finishDrafts(state.config, state.head, group);
    const headRewrite = finishing ? await finishing : undefined;
    const gathering = gatherFacts(state, group, headRewrite);
    const facts = gathering instanceof Promise ? await gathering : gathering;
    let write = buildGroupWrite(state.config, runViewOf(state), group, headRewrite, facts);
    if (write.writeIndex && state.indexUnread !== undefined) {
      await recoverBeforeGroupIndex(state, group);
      write = buildGroupWrite(state.config, runViewOf(state), group, headRewrite, facts);
    }
    for (const p of group.planned)
      if (p.stored.parts.length > 0)
        state.partsBySequence.set(
          p.draft.sequence,
          p.stored.parts.map((part) => part.key),
        );
    const through = group.planned.at(-1)?.draft.sequence ?? state.lastSequence;
    // The first attempt is awaited here, not through withRetry (a promise, a turn and two closures less per checkpoint).
    let report: WriteReport;
    try {
      report = await storePlan(state, write.plan, through);
    } catch (first) {
      report = await retryAfterFirst(() => storePlan(state, write.plan, through), state.retry, first);
    }
    // Other tools read this profile's files in place: on a store that writes them after answering (fs journal), they are there first.
    const applying = state.config.readInPlace ? appliedOf(state.config.storage) : undefined;
    if (applying) await applying;
    const acknowledging = acknowledgeGroup(state, group, headRewrite, facts, write, report);
    if (acknowledging) await acknowledging;
  } catch (raw) {
    failGroup(state, group, raw);
  }
}

/** The run as the write plan sees it. */
const runViewOf = <P>(state: WriterState<P>): RunView<P> => ({
  head: state.head,
  unindexed: state.unindexed,
  indexDoc: state.index.doc,
  indexedCount: state.index.doc?.checkpoint_count ?? state.indexUnread ?? 0,
  lastSequence: state.lastSequence,
  partsBySequence: state.partsBySequence,
});

/**
 * A run opened from `latest` alone, about to have its index rewritten: recovered in full first
 * (the stored index, the entries it lacks, every number a file claims), as after a failed group.
 * Returns the last sequence the writer had assumed, for the caller to compare.
 */
export async function recoverBeforeIndex<P>(state: WriterState<P>): Promise<number> {
  const assumed = state.lastSequence;
  state.needsRecovery = true;
  await openWithRetry(state);
  return assumed;
}

/**
 * {@link recoverBeforeIndex} before a group's write. The group keeps the numbers it was planned
 * with, unless a file some other program stored claims a number past the writer's: then the group
 * fails, nothing of it written, and the next group is numbered after that file.
 */
async function recoverBeforeGroupIndex<P>(state: WriterState<P>, group: GroupDraft<P>): Promise<void> {
  const assumed = await recoverBeforeIndex(state);
  if (state.lastSequence === assumed) {
    state.nextSequence = group.nextSequence; // recovery set it to the group's first number
    return;
  }
  throw new CheckpointError(
    'checkpoint_conflict',
    `run ${state.config.runId} holds snapshot numbers through ${state.lastSequence}, past the ${assumed} its latest named: another program stored them`,
    { details: { key: state.config.latestKey } },
  );
}

/**
 * Nothing of this group is acknowledged. Numbers go back to the pool, but storage is
 * read again before the next group: whatever did land (an ambiguous failure) keeps its number.
 */
function failGroup<P>(state: WriterState<P>, group: GroupDraft<P>, raw: unknown): void {
  const error = toCheckpointError(raw, 'checkpoint_atomic_write_failed', 'checkpoint write failed');
  state.nextSequence = group.firstSequence;
  state.needsRecovery = true;
  if (error.reasonCode === 'checkpoint_run_locked') state.opened = false;
  const result = failure(state, error, 'write');
  for (const p of group.planned) {
    p.creator.resolve(result);
    for (const job of p.coalesced) job.resolve(result);
  }
  for (const { job } of group.intoHead) job.resolve(result);
}
