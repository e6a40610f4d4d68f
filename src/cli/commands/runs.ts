import { collectRunFiles } from '../../snapshot-io/run-files.js';
import { decodeRunIndex } from '../../codec/run-index.js';
import type { Command } from '../command.js';
import { EXIT, formatBytes, printJson, table } from '../io.js';
import { mapLimit } from '../../storage/map-limit.js';
import { loadEntry } from '../../runs/inspect.js';
import { progressBar } from '../progress.js';
import { profileHint, storeLabel } from '../probe.js';

/** Newest activity first; runs without a time last, in run-id order. */
function byActivity(a: { lastActivity: string | null; runId: string }, b: { lastActivity: string | null; runId: string }): number {
  const time = (t: string | null): number => (t === null || Number.isNaN(Date.parse(t)) ? -1 : Date.parse(t));
  return time(b.lastActivity) - time(a.lastActivity) || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0);
}

/** The profile name in {@link profileHint}'s sentence. */
const guessed = (hint: string): string => /--profile (\S+?)\.?$/.exec(hint.trim())?.[1] ?? '';

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
      const latest = run.latest ? await loadEntry(storage, profile, run.latest) : undefined;
      let snapshots = run.history.length;
      if (run.index) {
        // Batched checkpoints are counted through the index, which lists each one.
        const stored = await storage.get(run.index.key);
        try {
          if (stored) snapshots = Math.max(snapshots, decodeRunIndex(stored.bytes, run.index.key).checkpoint_count);
        } catch {
          // A corrupt index is verify's business; the count falls back to history files.
        }
      }
      if (snapshots === 0 && run.latest) snapshots = 1;
      const snap = latest?.snapshot;
      return {
        runId: run.runId,
        status: snap ? snap.status : latest?.error ? `invalid (${latest.error.reasonCode})` : run.summary ? 'archived' : 'no latest',
        terminal: snap ? profile.isTerminal(snap.status) : run.summary !== undefined,
        sequence: snap?.sequence ?? null,
        snapshots,
        lastActivity: snap?.createdAt ?? null,
        bytes: run.bytes,
      };
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
