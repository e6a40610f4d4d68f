import type { Snapshot } from '../../contract/snapshot.js';
import { diffSnapshots } from '../../runs/diff.js';
import { langGraphView } from '../../langgraph/view.js';
import { runFilesOf, type Command, type CommandContext } from '../command.js';
import { CliError, EXIT, notFound, printJson } from '../io.js';
import { loadRunSnapshots, type SnapshotRow } from '../../runs/inspect.js';

/** A snapshot named on the command line: `latest`, a sequence number, or a snapshot id. */
function pick(rows: readonly SnapshotRow[], ref: string, runId: string): Snapshot<unknown> {
  const valid = rows.flatMap((r) => (r.snapshot ? [r.snapshot] : []));
  const found =
    ref === 'latest' ? valid.at(-1) : /^\d+$/.test(ref) ? valid.find((s) => s.sequence === Number(ref)) : valid.find((s) => s.id === ref);
  if (!found) throw notFound(`run "${runId}" has no valid snapshot "${ref}" (give a sequence number, a snapshot id or latest)`);
  return found;
}

const show = (v: unknown): string => JSON.stringify(v) ?? 'undefined';

/** `savepoint diff RUN A B [--all]` */
export const diffCommand: Command = {
  name: 'diff',
  usage: 'RUN A B [--all]',
  maxPositionals: 3,
  summary: 'Show the JSON paths added, removed and changed between two snapshots (A, B: sequence, id or latest)',
  options: { all: { type: 'boolean', description: 'Compare the whole envelope (status, sequence, …), not only the payload' } },
  async run(ctx: CommandContext) {
    const [runId, a, b] = ctx.positionals;
    if (runId === undefined || a === undefined || b === undefined) throw new CliError('diff needs RUN A B');
    ctx.profile.assertRunId(runId);
    const run = await runFilesOf(ctx, runId);
    const rows = await loadRunSnapshots(ctx.storage, ctx.profile, run);
    const from = pick(rows, a, runId);
    const to = pick(rows, b, runId);
    // A LangGraph checkpoint is compared as LangGraph users read it: channel values decoded, not the serializer's text inside JSON.
    const asRead = (s: Snapshot<unknown>): Snapshot<unknown> => {
      if (ctx.profile.name !== 'langgraph') return s;
      const view = langGraphView(s);
      return { ...s, payload: { channels: view.channels, next: view.next, step: view.step, metadata: view.metadata } };
    };
    const changes = diffSnapshots(asRead(from), asRead(to), { all: ctx.values.all === true });
    if (ctx.json) {
      printJson(ctx.io, { runId, from: { id: from.id, sequence: from.sequence }, to: { id: to.id, sequence: to.sequence }, changes });
      return EXIT.ok;
    }
    const { style } = ctx;
    const lines = changes.map((c) =>
      c.kind === 'added'
        ? style.green(`+ ${c.path} ${show(c.to)}`)
        : c.kind === 'removed'
          ? style.red(`- ${c.path} ${show(c.from)}`)
          : style.yellow(`~ ${c.path} ${show(c.from)} → ${show(c.to)}`),
    );
    ctx.io.stdout.write(
      `#${from.sequence} ${from.id} → #${to.sequence} ${to.id}: ${changes.length === 0 ? 'no differences' : `${changes.length} change(s)`}\n`,
    );
    if (lines.length > 0) ctx.io.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  },
};
