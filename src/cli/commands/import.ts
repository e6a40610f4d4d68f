import { collectRunFiles } from '../../snapshot-io/run-files.js';
import type { RunImportReport } from '../../profiles/import-run.js';
import { fsStorage } from '../../storage/fs/index.js';
import { declareAndAssertProfileStore } from '../../contract/shared-files.js';
import { stringFlag, type Command } from '../command.js';
import { runImporterOf } from '../importers.js';
import { CliError, EXIT, printJson, table } from '../io.js';
import { progressBar } from '../progress.js';

/** `savepoint import [RUN…] [--apply] [--to-dir DIR]` */
export const importCommand: Command = {
  name: 'import',
  usage: '[RUN…] [--apply] [--to-dir DIR]',
  summary:
    'Seal runs another tool wrote (all runs, or the RUNs named), in place or copied to --to-dir; a dry run unless --apply; a second run changes nothing',
  options: {
    apply: { type: 'boolean', description: 'Write (default: dry run, report only)' },
    'to-dir': {
      type: 'string',
      value: 'DIR',
      description: 'Copy the runs, sealed, into this directory store instead of sealing them in place',
    },
  },
  async run(ctx) {
    const importer = await runImporterOf(ctx.profile.name);
    if (!importer) throw new CliError(`profile ${ctx.profile.name} has no run import`);
    for (const runId of ctx.positionals) ctx.profile.assertRunId(runId);
    const apply = ctx.values.apply === true;
    const toDir = stringFlag(ctx, 'to-dir');
    const target = toDir === undefined ? undefined : fsStorage({ dir: toDir, create: true, cleanupOnOpen: false });
    // The copies are the profile's files: a new directory gets the layout their readers need.
    if (target) declareAndAssertProfileStore(target, ctx.profile, 'savepoint import');
    try {
      const runIds = ctx.positionals.length > 0 ? [...ctx.positionals] : [...(await collectRunFiles(ctx.storage, ctx.profile)).runs.keys()];
      const reports: RunImportReport[] = [];
      // A whole store of foreign runs takes a while: a progress bar on a terminal (not with -q or in a pipe).
      const bar = progressBar(ctx.io, runIds.length, apply ? 'importing' : 'checking', 20);
      for (const runId of runIds) {
        reports.push(await importer(ctx.storage, runId, { apply, ...(target ? { target } : {}) }));
        bar.tick();
      }
      bar.done();
      const changes = reports.reduce((n, r) => n + r.changes, 0);
      const skipped = reports.flatMap((r) => r.files.filter((f) => f.action === 'skip'));
      if (ctx.json) {
        printJson(ctx.io, { applied: apply, changes, runs: reports });
      } else {
        const rows = reports.flatMap((r) =>
          r.files.map((f) => [
            f.action === 'skip' ? ctx.style.red('skip') : f.action,
            r.runId,
            f.key,
            f.reasonCode ?? f.warnings.join(', '),
          ]),
        );
        if (rows.length > 0) ctx.io.stdout.write(table(['ACTION', 'RUN', 'FILE', 'WHY'], rows));
        const verb = apply ? (target ? 'copied or sealed' : 'sealed') : 'would be written (dry run; --apply writes)';
        ctx.io.stdout.write(
          `${reports.length} run${reports.length === 1 ? '' : 's'}: ${changes} file${changes === 1 ? '' : 's'} ${verb}, ${skipped.length} skipped.\n`,
        );
      }
      return skipped.length > 0 ? EXIT.failed : EXIT.ok;
    } finally {
      await target?.close();
    }
  },
};
