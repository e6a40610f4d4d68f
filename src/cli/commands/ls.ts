import { runArgument, runFilesOf, type Command, type CommandContext } from '../command.js';
import { EXIT, formatBytes, printJson, type Style } from '../io.js';
import { loadEntry, streamRunSnapshots, type SnapshotRow } from '../../runs/inspect.js';
import { coalescedTriggers } from '../../contract/coalesced-triggers.js';
import { decodeRunIndex } from '../../codec/run-index.js';
import { indexPathResolver, stripGz } from '../../resume/locate.js';
import type { Snapshot } from '../../contract/snapshot.js';
import type { RunFiles } from '../../snapshot-io/run-files.js';
import { progressBar } from '../progress.js';
import { lsForks } from '../langgraph-forks.js';

/** Each history file's sequence as the run's index gives it (for layouts whose names carry none), keyed without `.gz`. */
async function indexOrder(ctx: CommandContext, run: RunFiles): Promise<Map<string, number>> {
  const order = new Map<string, number>();
  if (!run.index || run.history.every((e) => e.info.sequence !== undefined)) return order;
  try {
    const stored = await ctx.storage.get(run.index.key);
    if (!stored) return order;
    const resolve = indexPathResolver(ctx.profile, run.runId);
    for (const e of decodeRunIndex(stored.bytes, run.index.key).checkpoints) {
      const target = resolve(e.file_path);
      if (target) order.set(stripGz(target.key), e.sequence);
    }
  } catch {
    // An unreadable index only costs the order across windows (verify reports it).
  }
  return order;
}

/** One `ls` in progress: rows are printed a window behind, so a trigger the next entry records for a snapshot is shown with it. */
interface LsState {
  readonly ctx: CommandContext;
  readonly latest: Snapshot<unknown> | undefined;
  readonly widths: readonly number[];
  pending: SnapshotRow[];
  readonly json: object[];
}

const HEADER = ['SEQ', 'CREATED', 'TRIGGER', 'STATUS', 'SIZE', 'STORED'] as const;
const RIGHT = new Set([0, 4]);

/** Column widths fixed before the first row (a stream cannot measure what it has not read): from the profile's names and the run's size. */
function columnWidths(ctx: CommandContext, run: RunFiles): number[] {
  const longest = (names: readonly string[], min: string): number => Math.max(min.length, ...names.map((n) => n.length));
  return [
    Math.max(3, String(run.history.length + run.batches.length + 1).length),
    24,
    longest(Object.keys(ctx.profile.triggers), 'TRIGGER'),
    Math.max(longest(ctx.profile.statuses.all, 'STATUS'), 'unreadable'.length),
    8,
    0,
  ];
}

// eslint-disable-next-line no-control-regex
const visible = (s: string): number => [...s.replace(/\u001b\[[0-9;]*m/g, '')].length;

function line(cells: readonly string[], widths: readonly number[]): string {
  return `${cells
    .map((c, i) => {
      const pad = ' '.repeat(Math.max(0, widths[i]! - visible(c)));
      return RIGHT.has(i) ? pad + c : i === cells.length - 1 ? c : c + pad;
    })
    .join('  ')
    .trimEnd()}\n`;
}

function rowCells(row: SnapshotRow, coalesced: readonly string[], style: Style): string[] {
  const stored = `${row.compressed ? 'gzip' : 'plain'}${row.batched ? ' (batch)' : ''}${row.readWarnings ? ' unsealed' : ''}`;
  if (!row.snapshot)
    return ['?', '-', style.red(row.error!.reasonCode), style.red('unreadable'), formatBytes(row.size), `${stored} ${row.key}`];
  const s = row.snapshot;
  const suffix = coalesced.length > 0 ? style.dim(` (+${coalesced.join(', ')})`) : '';
  return [String(s.sequence), s.createdAt, `${s.source}${suffix}`, s.status, formatBytes(row.size), stored];
}

function jsonRow(row: SnapshotRow, coalesced: readonly string[]): object {
  if (!row.snapshot)
    return {
      key: row.key,
      error: { reasonCode: row.error!.reasonCode, message: row.error!.message },
      size: row.size,
      compressed: row.compressed,
    };
  const s = row.snapshot;
  return {
    key: row.key,
    sequence: s.sequence,
    id: s.id,
    createdAt: s.createdAt,
    source: s.source,
    coalesced,
    priority: s.priority ?? null,
    status: s.status,
    size: row.size,
    compressed: row.compressed,
    batched: row.batched,
    ...(row.readWarnings ? { readWarnings: row.readWarnings } : {}),
  };
}

/** Prints the pending rows; `next` are the rows after them, whose records may name a pending snapshot (immutable history). */
function flush(state: LsState, next: readonly SnapshotRow[]): void {
  const snapshots = (rows: readonly SnapshotRow[]): Snapshot<unknown>[] => rows.flatMap((r) => (r.snapshot ? [r.snapshot] : []));
  const coalesced = coalescedTriggers([...snapshots(state.pending), ...snapshots(next)], state.latest);
  for (const row of state.pending) {
    const sources = row.snapshot ? (coalesced.get(row.snapshot.id) ?? []).map((d) => d.source) : [];
    if (state.ctx.json) state.json.push(jsonRow(row, sources));
    else state.ctx.io.stdout.write(line(rowCells(row, sources, state.ctx.style), state.widths));
  }
  state.pending = [...next];
}

/** `savepoint ls RUN` */
export const lsCommand: Command = {
  name: 'ls',
  usage: 'RUN [--forks]',
  maxPositionals: 1,
  summary: "List a run's history: sequence, time, trigger (and coalesced ones), status, size, compression",
  options: {
    forks: {
      type: 'boolean',
      description:
        "With --profile langgraph: only the thread's forks (checkpoints with two or more children) and each branch's first checkpoint",
    },
  },
  async run(ctx) {
    const runId = runArgument(ctx, 'ls');
    const run = await runFilesOf(ctx, runId);
    if (ctx.values.forks === true) return lsForks(ctx, run);
    const order = await indexOrder(ctx, run);
    // Coalesced triggers may be in latest (immutable history): read it once, up front.
    const latest =
      run.latest && (run.history.length > 0 || run.batches.length > 0)
        ? (await loadEntry(ctx.storage, ctx.profile, run.latest)).snapshot
        : undefined;
    const state: LsState = { ctx, latest, widths: columnWidths(ctx, run), pending: [], json: [] };
    const bar = progressBar(ctx.io, run.history.length + run.batches.length, 'reading');
    if (!ctx.json) ctx.io.stdout.write(line(HEADER, state.widths));
    const rows = streamRunSnapshots(ctx.storage, ctx.profile, run, { orderOf: (e) => order.get(stripGz(e.key)), onFile: () => bar.tick() });
    for await (const window of rows) flush(state, window);
    flush(state, []);
    bar.done();
    if (ctx.json) printJson(ctx.io, { runId, snapshots: state.json });
    return EXIT.ok;
  },
};
