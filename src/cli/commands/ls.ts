import { runArgument, runFilesOf, type Command } from '../command.js';
import { EXIT, formatBytes, printJson, table } from '../io.js';
import { loadEntry, loadRunSnapshots } from '../../runs/inspect.js';
import { coalescedTriggers } from '../../contract/coalesced-triggers.js';
import { progressBar } from '../progress.js';

/** `savepoint ls RUN` */
export const lsCommand: Command = {
  name: 'ls',
  usage: 'RUN',
  maxPositionals: 1,
  summary: "List a run's history: sequence, time, trigger (and coalesced ones), status, size, compression",
  options: {},
  async run(ctx) {
    const runId = runArgument(ctx, 'ls');
    const run = await runFilesOf(ctx, runId);
    const bar = progressBar(ctx.io, run.history.length + run.batches.length, 'reading');
    const rows = await loadRunSnapshots(ctx.storage, ctx.profile, run, () => bar.tick());
    bar.done();
    // Coalesced triggers may be in latest or in a later history entry (immutable history): gather them per snapshot.
    const latest =
      run.latest && rows.some((r) => r.key !== run.latest!.key)
        ? (await loadEntry(ctx.storage, ctx.profile, run.latest)).snapshot
        : undefined;
    const coalesced = coalescedTriggers(
      rows.flatMap((r) => (r.snapshot ? [r.snapshot] : [])),
      latest,
    );
    const coalescedOf = (id: string): string[] => (coalesced.get(id) ?? []).map((d) => d.source);
    if (ctx.json) {
      printJson(ctx.io, {
        runId,
        snapshots: rows.map((r) =>
          r.snapshot
            ? {
                key: r.key,
                sequence: r.snapshot.sequence,
                id: r.snapshot.id,
                createdAt: r.snapshot.createdAt,
                source: r.snapshot.source,
                coalesced: coalescedOf(r.snapshot.id),
                priority: r.snapshot.priority ?? null,
                status: r.snapshot.status,
                size: r.size,
                compressed: r.compressed,
                batched: r.batched,
                ...(r.readWarnings ? { readWarnings: r.readWarnings } : {}),
              }
            : { key: r.key, error: { reasonCode: r.error!.reasonCode, message: r.error!.message }, size: r.size, compressed: r.compressed },
        ),
      });
      return EXIT.ok;
    }
    const { style } = ctx;
    ctx.io.stdout.write(
      table(
        ['SEQ', 'CREATED', 'TRIGGER', 'STATUS', 'SIZE', 'STORED'],
        rows.map((r) => {
          const stored = `${r.compressed ? 'gzip' : 'plain'}${r.batched ? ' (batch)' : ''}${r.readWarnings ? ' unsealed' : ''}`;
          if (!r.snapshot)
            return ['?', '-', style.red(r.error!.reasonCode), style.red('unreadable'), formatBytes(r.size), `${stored} ${r.key}`];
          const s = r.snapshot;
          const sources = coalescedOf(s.id);
          const coalesced = sources.length > 0 ? style.dim(` (+${sources.join(', ')})`) : '';
          return [String(s.sequence), s.createdAt, `${s.source}${coalesced}`, s.status, formatBytes(r.size), stored];
        }),
        new Set([0, 4]),
      ),
    );
    return EXIT.ok;
  },
};
