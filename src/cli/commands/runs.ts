import { collectRunFiles } from '../../snapshot-io/run-files.js';
import { decodeRunIndex } from '../../codec/run-index.js';
import type { Command } from '../command.js';
import { EXIT, formatBytes, printJson, table } from '../io.js';
import { mapLimit } from '../../storage/map-limit.js';
import { loadEntry } from '../../runs/inspect.js';
import { progressBar } from '../progress.js';
import type { CommandContext } from '../command.js';
import type { RunFiles } from '../../snapshot-io/run-files.js';
import type { Snapshot } from '../../contract/snapshot.js';
import { isCheckpointError, type CheckpointError } from '../../contract/errors.js';
import { locateNewestSnapshot } from '../../resume/locate.js';
import { langGraphView } from '../../langgraph/view.js';
import { profileHint, storeLabel } from '../probe.js';

/** Newest activity first; runs without a time last, in run-id order. */
function byActivity(a: { lastActivity: string | null; runId: string }, b: { lastActivity: string | null; runId: string }): number {
  const time = (t: string | null): number => (t === null || Number.isNaN(Date.parse(t)) ? -1 : Date.parse(t));
  return time(b.lastActivity) - time(a.lastActivity) || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0);
}

/** The profile name in {@link profileHint}'s sentence. */
const guessed = (hint: string): string => /--profile (\S+?)\.?$/.exec(hint.trim())?.[1] ?? '';

/** One row of `runs`. */
interface RunRow {
  readonly runId: string;
  readonly status: string;
  readonly terminal: boolean;
  readonly sequence: number | null;
  readonly snapshots: number;
  readonly lastActivity: string | null;
  readonly bytes: number;
  /** A LangGraph thread's newest checkpoint, as LangGraph names things (profile langgraph). */
  readonly langgraph?: { threadId: string; checkpointNs: string; checkpointId: string; step: number | null; next: readonly string[] };
}

/** How many snapshots a run holds: history files, or the index's count when batch files hold more. */
async function snapshotCount(ctx: CommandContext, run: RunFiles): Promise<number> {
  let snapshots = run.history.length;
  if (run.index) {
    // Batched checkpoints are counted through the index, which lists each one.
    const stored = await ctx.storage.get(run.index.key);
    try {
      if (stored) snapshots = Math.max(snapshots, decodeRunIndex(stored.bytes, run.index.key).checkpoint_count);
    } catch {
      // A corrupt index is verify's business; the count falls back to history files.
    }
  }
  return snapshots === 0 && run.latest ? 1 : snapshots;
}

/** The run's newest snapshot: its latest document, or (a layout without one, as LangGraph's) the newest history entry. */
async function newestOf(ctx: CommandContext, run: RunFiles): Promise<{ snapshot?: Snapshot<unknown>; error?: CheckpointError }> {
  if (run.latest) return loadEntry(ctx.storage, ctx.profile, run.latest);
  if (run.history.length === 0 && run.batches.length === 0) return {};
  try {
    return { snapshot: (await locateNewestSnapshot({ storage: ctx.storage, profile: ctx.profile, runId: run.runId })).snapshot };
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_no_valid_snapshot') || isCheckpointError(err, 'checkpoint_not_found')) return { error: err };
    throw err;
  }
}

async function summarizeRun(ctx: CommandContext, run: RunFiles): Promise<RunRow> {
  const { profile } = ctx;
  const newest = await newestOf(ctx, run);
  const snap = newest.snapshot;
  const base = {
    runId: run.runId,
    status: snap ? snap.status : newest.error ? `invalid (${newest.error.reasonCode})` : run.summary ? 'archived' : 'no latest',
    terminal: snap ? profile.isTerminal(snap.status) : run.summary !== undefined,
    sequence: snap?.sequence ?? null,
    snapshots: await snapshotCount(ctx, run),
    lastActivity: snap?.createdAt ?? null,
    bytes: run.bytes,
  };
  if (!snap || profile.name !== 'langgraph') return base;
  const view = langGraphView(snap);
  return {
    ...base,
    status: view.next.length > 0 ? `next: ${view.next.join(', ')}` : 'done',
    terminal: view.next.length === 0,
    lastActivity: view.ts,
    langgraph: {
      threadId: view.threadId,
      checkpointNs: view.checkpointNs,
      checkpointId: view.checkpointId,
      step: view.step,
      next: view.next,
    },
  };
}

/** The LangGraph table: threads, their newest checkpoint, step and next nodes. */
function langGraphTable(rows: readonly RunRow[]): string {
  return table(
    ['THREAD', 'CHECKPOINT', 'STEP', 'NEXT', 'CHECKPOINTS', 'LAST ACTIVITY', 'SIZE'],
    rows.map((r) => {
      const g = r.langgraph;
      const thread = g ? `${g.threadId}${g.checkpointNs ? ` (${g.checkpointNs})` : ''}` : r.runId;
      return [
        thread,
        g?.checkpointId ?? r.status,
        g?.step === null || g === undefined ? '-' : String(g.step),
        g ? (g.next.length > 0 ? g.next.join(', ') : 'done') : '-',
        String(r.snapshots),
        r.lastActivity ?? '-',
        formatBytes(r.bytes),
      ];
    }),
    new Set([2, 4, 6]),
  );
}

/** `savepoint runs [--incomplete]` */
export const runsCommand: Command = {
  name: 'runs',
  usage: '[--incomplete]',
  maxPositionals: 0,
  summary: 'List runs with their latest status, snapshot count, last activity and size',
  options: { incomplete: { type: 'boolean', description: 'Only runs whose latest status is not terminal (resumable on startup)' } },
  async run(ctx) {
    const { storage, profile } = ctx;
    const files = await collectRunFiles(storage, profile);
    const bar = progressBar(ctx.io, files.runs.size, 'reading runs');
    const runs = await mapLimit([...files.runs.values()], 8, async (run) => {
      bar.tick();
      return summarizeRun(ctx, run);
    });
    bar.done();
    // Newest activity first (restic's order of what matters now); runs with no readable time last, by id.
    const shown = (ctx.values.incomplete ? runs.filter((r) => !r.terminal && r.sequence !== null) : runs).sort(byActivity);
    if (ctx.json) {
      printJson(ctx.io, { profile: profile.name, runs: shown });
      return EXIT.ok;
    }
    // A store that holds another profile's runs (none decodes under this one): name the profile that fits, as verify does.
    const hint = runs.every((r) => r.sequence === null) ? await profileHint(storage, profile) : '';
    if (shown.length === 0 || hint) {
      const what = `No ${ctx.values.incomplete ? 'incomplete ' : ''}${profile.name} runs`;
      ctx.io.stdout.write(hint ? `${what} in ${storeLabel(ctx.values, storage)} — try --profile ${guessed(hint)}.\n` : `${what}.\n`);
      return EXIT.ok;
    }
    if (profile.name === 'langgraph') {
      ctx.io.stdout.write(langGraphTable(shown));
      return EXIT.ok;
    }
    const color = (r: (typeof shown)[number]): string =>
      r.status.startsWith('invalid') ? ctx.style.red(r.status) : r.terminal ? ctx.style.dim(r.status) : ctx.style.yellow(r.status);
    ctx.io.stdout.write(
      table(
        ['RUN', 'STATUS', 'SEQ', 'SNAPSHOTS', 'LAST ACTIVITY', 'SIZE'],
        shown.map((r) => [
          r.runId,
          color(r),
          r.sequence === null ? '-' : String(r.sequence),
          String(r.snapshots),
          r.lastActivity ?? '-',
          formatBytes(r.bytes),
        ]),
        new Set([2, 3, 5]),
      ),
    );
    return EXIT.ok;
  },
};
