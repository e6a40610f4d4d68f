import type { CommandContext } from './command.js';
import { CliError, EXIT, printJson } from './io.js';
import { loadRunSnapshots } from '../runs/inspect.js';
import type { RunFiles } from '../snapshot-io/run-files.js';
import { forkCheckpointOf, threadForks, type ForkCheckpoint, type ThreadFork } from '../langgraph/forks.js';
import { progressBar } from './progress.js';

/** A thread's checkpoints as fork lists see them (unreadable files left out: `ls` and `verify` report them). */
export async function forkCheckpoints(ctx: CommandContext, run: RunFiles): Promise<ForkCheckpoint[]> {
  const bar = progressBar(ctx.io, run.history.length + run.batches.length, 'reading');
  const rows = await loadRunSnapshots(ctx.storage, ctx.profile, run, () => bar.tick());
  bar.done();
  return rows.flatMap((r) => (r.snapshot ? [forkCheckpointOf(r.snapshot)] : []));
}

/** `step 3, update` */
const stepAndSource = (c: { step: number | null; source: string }): string => `step ${c.step ?? '-'}, ${c.source}`;

/** The text of one fork: its parent, then one line per branch. */
function forkLines(ctx: CommandContext, fork: ThreadFork): string[] {
  const { style } = ctx;
  const parent =
    'sequence' in fork.parent ? `${fork.parent.checkpointId}  (${stepAndSource(fork.parent)})` : `${fork.parent.checkpointId}  (pruned)`;
  const width = Math.max(...fork.children.map((c) => c.checkpointId.length));
  return [
    `${style.bold('fork at')} ${parent}`,
    ...fork.children.map(
      (c) => `  ${c.checkpointId.padEnd(width)}  ${`step ${c.step ?? '-'}`.padEnd(8)}  ${c.source.padEnd(6)}  seq ${c.sequence}  ${c.ts}`,
    ),
  ];
}

/**
 * `savepoint ls THREAD --forks` (profile langgraph): the thread's forks as LangGraph users
 * think of them — each checkpoint with two or more children (a branch from `updateState` on an
 * older checkpoint, or a replay from it), its id, step and source, and each branch's first
 * checkpoint: id, step, source, sequence, time.
 */
export async function lsForks(ctx: CommandContext, run: RunFiles): Promise<number> {
  if (ctx.profile.name !== 'langgraph')
    throw new CliError(
      `--forks lists a LangGraph thread's branches: use it with --profile langgraph (this store reads as ${ctx.profile.name})`,
    );
  const forks = threadForks(await forkCheckpoints(ctx, run));
  if (ctx.json) {
    printJson(ctx.io, { runId: run.runId, forks });
    return EXIT.ok;
  }
  if (forks.length === 0) {
    ctx.io.stdout.write(`thread ${run.runId} has no forks: each of its checkpoints has at most one child\n`);
    return EXIT.ok;
  }
  ctx.io.stdout.write(`${forks.flatMap((f, i) => [...(i > 0 ? [''] : []), ...forkLines(ctx, f)]).join('\n')}\n`);
  return EXIT.ok;
}
