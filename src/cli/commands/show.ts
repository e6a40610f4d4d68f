import { readSnapshot } from '../../snapshot-io/read-snapshot.js';
import type { Snapshot } from '../../contract/snapshot.js';
import { runArgument, runFilesOf, stringFlag, type Command, type CommandContext } from '../command.js';
import { locateNewestSnapshot } from '../../resume/locate.js';
import { langGraphView } from '../../langgraph/view.js';
import { INTERRUPT_CHANNEL, pendingWritesOf } from '../../langgraph/pending-writes-view.js';
import { CliError, EXIT, notFound, printJson } from '../io.js';
import { loadRunSnapshots, type SnapshotRow } from '../../runs/inspect.js';
import { childrenByParent, forkCheckpointOf, type ForkCheckpoint } from '../../langgraph/forks.js';

/**
 * The children of `snapshot` among the thread's rows (two or more: a fork). Without rows it is
 * the thread's newest checkpoint, which has none: a child is always put after its parent.
 */
function childrenOf(snapshot: Snapshot<unknown>, rows: readonly SnapshotRow[] | undefined): ForkCheckpoint[] {
  if (!rows) return [];
  const all = rows.flatMap((r) => (r.snapshot ? [forkCheckpointOf(r.snapshot)] : []));
  return childrenByParent(all).get(snapshot.id) ?? [];
}

/** A LangGraph checkpoint as LangGraph users read it: thread, checkpoint, parent, children, step, next, channels decoded, pending writes, interrupts. */
async function showLangGraph(
  ctx: CommandContext,
  runId: string,
  key: string,
  snapshot: Snapshot<unknown>,
  rows: readonly SnapshotRow[] | undefined,
): Promise<number> {
  const view = langGraphView(snapshot);
  const writes = await pendingWritesOf(ctx.storage, runId, snapshot.sequence);
  const interrupts = writes.filter((w) => w.channel === INTERRUPT_CHANNEL).map((w) => w.value);
  const children = childrenOf(snapshot, rows);
  if (ctx.json) {
    printJson(ctx.io, { key, snapshot, langgraph: { ...view, children, pendingWrites: writes, interrupts } });
    return EXIT.ok;
  }
  const { style } = ctx;
  const b = (label: string): string => style.bold(label.padEnd(12));
  const lines = [
    `${b('thread')}${view.threadId}${view.checkpointNs ? ` (namespace ${view.checkpointNs})` : ''}`,
    `${b('checkpoint')}${view.checkpointId}`,
    `${b('parent')}${view.parentCheckpointId ?? '-'}`,
    ...(children.length > 0
      ? [
          `${b(children.length > 1 ? 'forks' : 'child')}${children.map((c) => `${c.checkpointId} (step ${c.step ?? '-'}, ${c.source})`).join(', ')}`,
        ]
      : []),
    `${b('step')}${view.step ?? '-'} (${view.source})`,
    `${b('time')}${view.ts}`,
    `${b('next')}${view.next.length > 0 ? view.next.join(', ') : 'nothing: the graph has finished'}`,
    ...(interrupts.length > 0 ? [`${b('interrupts')}${interrupts.map((v) => JSON.stringify(v)).join(', ')}`] : []),
    `${b('file')}${key}`,
    style.bold('channels'),
    ...Object.entries(view.channels).map(([name, value]) => `  ${name}: ${JSON.stringify(value)}`),
    ...(writes.length > 0
      ? [style.bold('pending writes'), ...writes.map((w) => `  ${w.taskPath || w.taskId} → ${w.channel}: ${JSON.stringify(w.value)}`)]
      : []),
  ];
  ctx.io.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}

/** `savepoint show RUN [--seq N | --id ID]` */
export const showCommand: Command = {
  name: 'show',
  usage: 'RUN [--seq N|latest | --id ID]',
  maxPositionals: 1,
  summary: 'Show one snapshot (the latest by default)',
  options: {
    seq: { type: 'string', value: 'N', description: 'The snapshot with this sequence number, or latest (the newest)' },
    id: { type: 'string', value: 'ID', description: 'The snapshot with this id (a LangGraph checkpoint id)' },
  },
  async run(ctx) {
    const runId = runArgument(ctx, 'show');
    const seqFlag = stringFlag(ctx, 'seq');
    const idFlag = stringFlag(ctx, 'id');
    if (seqFlag !== undefined && idFlag !== undefined) throw new CliError('give --seq or --id, not both');
    const seq = seqFlag === undefined || seqFlag === 'latest' ? undefined : Number(seqFlag);
    if (seq !== undefined && !(Number.isInteger(seq) && seq >= 1)) throw new CliError('--seq takes a positive integer');

    let snapshot: Snapshot<unknown> | undefined;
    let key: string;
    let rows: SnapshotRow[] | undefined;
    if (seq === undefined && idFlag === undefined) {
      key = ctx.profile.layout.latestKey(runId);
      snapshot = await readSnapshot(ctx.storage, ctx.profile, key);
      if (!snapshot) {
        const run = await runFilesOf(ctx, runId); // a run that is not there is named as such
        // A layout without a latest document (LangGraph's): the newest history entry, as resume finds it.
        const newest =
          run.history.length > 0 || run.batches.length > 0
            ? await locateNewestSnapshot({ storage: ctx.storage, profile: ctx.profile, runId }).catch(() => undefined)
            : undefined;
        if (!newest) throw notFound(`run "${runId}" has no readable latest snapshot: name one with --seq N or --id ID`);
        snapshot = newest.snapshot;
        key = newest.key;
      }
    } else {
      const run = await runFilesOf(ctx, runId);
      rows = await loadRunSnapshots(ctx.storage, ctx.profile, run);
      const found = rows.find((r) => r.snapshot && (seq !== undefined ? r.snapshot.sequence === seq : r.snapshot.id === idFlag));
      if (!found?.snapshot)
        throw notFound(`run "${runId}" has no valid snapshot with ${seq !== undefined ? `sequence ${seq}` : `id ${idFlag}`}`);
      snapshot = found.snapshot;
      key = found.key;
    }
    if (ctx.profile.name === 'langgraph') return showLangGraph(ctx, runId, key, snapshot, rows);
    if (ctx.json) {
      printJson(ctx.io, { key, snapshot });
      return EXIT.ok;
    }
    const { style } = ctx;
    const lines = [
      `${style.bold('run')}        ${snapshot.runId}`,
      `${style.bold('snapshot')}   ${snapshot.id}`,
      `${style.bold('sequence')}   ${snapshot.sequence}`,
      `${style.bold('created')}    ${snapshot.createdAt}`,
      `${style.bold('trigger')}    ${snapshot.source}${snapshot.priority ? ` (${snapshot.priority})` : ''}`,
      ...(snapshot.sourceDetails.length > 0
        ? [
            `${style.bold('coalesced')}  ${snapshot.sourceDetails.map((d) => `${d.source} at ${d.at}${d.coalesced_into ? ` (into ${d.coalesced_into})` : ''}`).join(', ')}`,
          ]
        : []),
      `${style.bold('status')}     ${snapshot.status}`,
      `${style.bold('checksum')}   sha256:${snapshot.integrity.checksum}`,
      `${style.bold('file')}       ${key}`,
      `${style.bold('payload')}`,
      JSON.stringify(snapshot.payload, null, 2),
    ];
    ctx.io.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  },
};
