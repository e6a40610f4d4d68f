import type { WriteReport } from './ordered-write.js';
import type { GroupDraft, HeadRewrite, Planned } from './plan-group.js';
import { removePruned } from './prune-step.js';
import { pushHeldAtRunEnd } from './run-end-push.js';
import type { HeadLocation } from './sequence-recovery.js';
import type { WriterState } from './state.js';
import type { CheckpointSuccess, WriterEventMap } from './types.js';
import { endsRun, repointEntries, withRewrittenHead, type BatchFileWrite, type GroupFacts, type GroupWrite } from './write-plan.js';

/** How the group's new snapshots are reported: `written`, or `queued` when the store holds them locally. */
type Outcome = 'written' | 'queued';

/**
 * A durable group: acknowledges its jobs in call order, moves the head, and keeps the
 * run's index entries and history as the stored files now are. A held run end is pushed
 * first (run-end-push.ts).
 */
export function acknowledgeGroup<P>(
  state: WriterState<P>,
  group: GroupDraft<P>,
  headRewrite: HeadRewrite<P> | undefined,
  facts: GroupFacts,
  write: GroupWrite,
  report: WriteReport,
): void | Promise<void> {
  const { config } = state;
  if (report.pending && endsRun(config.profile, group.planned)) {
    return pushHeldAtRunEnd(config.storage).then((pushed) =>
      settleGroup(state, group, headRewrite, facts, write, report, pushed ? 'written' : 'queued'),
    );
  }
  return settleGroup(state, group, headRewrite, facts, write, report, report.pending ? 'queued' : 'written');
}

/** Acknowledges the group's jobs with `outcome` and moves the run on; a promise only while pruned files are deleted. */
function settleGroup<P>(
  state: WriterState<P>,
  group: GroupDraft<P>,
  headRewrite: HeadRewrite<P> | undefined,
  facts: GroupFacts,
  write: GroupWrite,
  report: WriteReport,
  outcome: Outcome,
): void | Promise<void> {
  const { config } = state;
  const { planned } = group;
  const mode = write.batchFile ? 'batch-file' : report.mode;
  state.unindexed = write.writeIndex ? [] : write.entries;
  if (headRewrite) settleHeadRewrite(state, group, headRewrite, report);
  for (const p of planned) acknowledgePlanned(state, p, planned, outcome, mode);
  const newest = planned.at(-1);
  if (newest) advanceHead(state, newest, write.batchFile, report);
  const { held, prune } = facts;
  if (!config.autoRetention) return;
  if (held) state.history = [...state.history.filter((e) => e.file_path !== held.replaced), ...repointEntries(state.history, held)];
  state.history.push(...write.written);
  if (prune.length > 0) return removePruned(state, prune, write.plan.deletes !== undefined);
}

/** The head, rewritten with the triggers coalesced into it, moves to its new version; those triggers are acknowledged `coalesced`. */
function settleHeadRewrite<P>(state: WriterState<P>, group: GroupDraft<P>, headRewrite: HeadRewrite<P>, report: WriteReport): void {
  const head = state.head;
  if (!head) return;
  const { immutableHistory, hasHistory, latestKey, runId } = state.config;
  const { planned, intoHead } = group;
  const newest = planned.at(-1);
  const loc = head.location;
  const location: HeadLocation =
    loc.kind === 'history'
      ? { kind: 'history', key: loc.key, version: report.versions.get(loc.key) ?? loc.version }
      : loc.kind === 'batch'
        ? {
            kind: 'batch',
            key: loc.key,
            version: report.versions.get(loc.key) ?? loc.version,
            members: withRewrittenHead(loc.members, head.header.sequence, headRewrite.stored.bytes),
          }
        : loc;
  state.head = {
    ...head,
    header: headRewrite.header,
    ...(immutableHistory ? { location: loc, latestOnly: [...head.latestOnly, ...intoHead.map((x) => x.record)] } : { location }),
  };
  // Where the records are: the rewritten entry, latest, or (immutable history) the new snapshot's entry.
  const key = immutableHistory ? (planned[0]?.key ?? latestKey) : loc.kind === 'history' || loc.kind === 'batch' ? loc.key : latestKey;
  const s = headRewrite.stored.snapshot;
  for (const { job } of intoHead) {
    const result: CheckpointSuccess<P> = {
      ok: true,
      outcome: 'coalesced',
      snapshotId: s.id,
      sequence: s.sequence,
      key,
      snapshot: s,
      ...(newest && !hasHistory ? { supersededBy: newest.draft.sequence } : {}),
    };
    state.emitter.emit('coalesced', {
      runId,
      snapshotId: s.id,
      sequence: s.sequence,
      source: job.trigger.source,
      status: s.status,
      recorded: s.sourceDetails.length,
    });
    job.resolve(result);
  }
}

/** Acknowledges a new snapshot's creator and the triggers coalesced into it (latest-only profiles: superseded by the group's newest). */
function acknowledgePlanned<P>(
  state: WriterState<P>,
  p: Planned<P>,
  planned: readonly Planned<P>[],
  outcome: Outcome,
  mode: WriterEventMap['written']['mode'],
): void {
  const { emitter, config } = state;
  const { runId } = config;
  const newest = planned.at(-1);
  const s = p.stored.snapshot;
  const supersededBy = !config.hasHistory && p !== newest ? newest!.draft.sequence : undefined;
  // phased-workflow-github.md, size_management: "3. Log warning about large checkpoint".
  if (p.stored.splitFrom !== undefined) {
    const event = {
      runId,
      sequence: s.sequence,
      bytes: p.stored.splitFrom,
      limit: config.maxBytes,
      parts: p.stored.parts.map((part) => part.key),
    };
    if (emitter.has('split')) emitter.emit('split', event);
    else if (!state.splitLogged) {
      // The spec says "log": without a listener the console gets it, once per writer, with sizes only (no payload).
      state.splitLogged = true;
      console.warn(
        `savepoint: snapshot ${event.sequence} of run ${runId} is ${event.bytes} bytes, over the ${event.limit}-byte limit: split into ${event.parts.length} part file(s)`,
      );
    }
  }
  if (emitter.has('written')) {
    emitter.emit('written', {
      runId,
      snapshotId: s.id,
      sequence: s.sequence,
      source: s.source,
      status: s.status,
      key: p.key,
      bytes: p.stored.bytes.length,
      outcome,
      groupSize: planned.length,
      mode,
    });
  }
  p.creator.resolve(
    supersededBy === undefined
      ? { ok: true, outcome, snapshotId: s.id, sequence: s.sequence, key: p.key, snapshot: s }
      : { ok: true, outcome, snapshotId: s.id, sequence: s.sequence, key: p.key, snapshot: s, supersededBy },
  );
  for (const job of p.coalesced) {
    emitter.emit('coalesced', {
      runId,
      snapshotId: s.id,
      sequence: s.sequence,
      source: job.trigger.source,
      status: s.status,
      recorded: s.sourceDetails.length,
    });
    job.resolve({
      ok: true,
      outcome: 'coalesced',
      snapshotId: s.id,
      sequence: s.sequence,
      key: p.key,
      snapshot: s,
      ...(supersededBy === undefined ? {} : { supersededBy }),
    });
  }
}

/** The group's newest snapshot becomes the head, where it is stored (a file stored without a version is closed for coalescing). */
function advanceHead<P>(state: WriterState<P>, newest: Planned<P>, batchFile: BatchFileWrite | undefined, report: WriteReport): void {
  state.lastSequence = newest.draft.sequence;
  let location: HeadLocation;
  if (!state.config.hasHistory) location = { kind: 'latest' };
  else if (batchFile)
    location = { kind: 'batch', key: batchFile.key, version: report.versions.get(batchFile.key) ?? '', members: batchFile.members };
  else location = { kind: 'history', key: newest.key, version: report.versions.get(newest.key) ?? '' };
  if ((location.kind === 'history' || location.kind === 'batch') && location.version === '') location = { kind: 'fixed' };
  state.head = {
    header: newest.draft,
    payloadText: newest.payloadText,
    payloadPieces: newest.payloadPieces,
    state: newest.state,
    createdAtMs: newest.createdAtMs,
    location,
    latestOnly: [],
  };
}
