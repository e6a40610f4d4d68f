import { readFile } from 'node:fs/promises';
import { parseJson } from '../../codec/canonical-json.js';
import { readSnapshot } from '../../snapshot-io/read-snapshot.js';
import { createWriter } from '../../writer/create-writer.js';
import { runArgument, stringFlag, type Command } from '../command.js';
import { CliError, EXIT, printJson } from '../io.js';

/**
 * `savepoint checkpoint RUN --source manual [--status S] [--payload FILE|-]` — the spec's
 * manual `/checkpoint` trigger from a shell (snapshot-lifecycle.md "Manual boundary").
 * Without `--payload`, the run's latest payload is carried forward, so a shell hook can
 * mark a moment without knowing the agent's state.
 */
export const checkpointCommand: Command = {
  name: 'checkpoint',
  usage: 'RUN --source SOURCE [--status S] [--payload FILE|-]',
  maxPositionals: 1,
  summary: 'Write a checkpoint from a shell (the manual trigger)',
  options: {
    source: { type: 'string', value: 'SOURCE', description: 'Trigger name (default "manual")' },
    status: { type: 'string', value: 'S', description: "Status (default: the latest snapshot's, else the profile's active status)" },
    payload: { type: 'string', value: 'FILE|-', description: 'JSON payload from a file or stdin (default: the latest payload)' },
  },
  async run(ctx) {
    const runId = runArgument(ctx, 'checkpoint');
    const { profile, storage } = ctx;
    const source = stringFlag(ctx, 'source') ?? 'manual';
    if (!Object.hasOwn(profile.triggers, source)) {
      throw new CliError(`profile "${profile.name}" has no trigger "${source}"; valid: ${Object.keys(profile.triggers).join(', ')}`);
    }
    const payloadArg = stringFlag(ctx, 'payload');
    let payload: unknown;
    if (payloadArg !== undefined) {
      const text =
        payloadArg === '-'
          ? await ctx.io.readStdin()
          : await readFile(payloadArg, 'utf8').catch(() => {
              throw new CliError(`cannot read payload file ${payloadArg}`);
            });
      payload = parseJson(text, payloadArg === '-' ? 'payload from stdin' : payloadArg);
    }
    const writer = createWriter({ storage, profile, runId, clock: ctx.clock, failMode: 'throw', heartbeatIntervalMs: false });
    try {
      const opened = await writer.open();
      if (!opened.ok) throw opened.error;
      let status = stringFlag(ctx, 'status');
      if (payload === undefined || status === undefined) {
        const latest = opened.lastSequence > 0 ? await readSnapshot(storage, profile, profile.layout.latestKey(runId)) : undefined;
        if (payload === undefined) {
          if (!latest) throw new CliError(`run "${runId}" has no snapshot to carry forward; pass --payload`, EXIT.usage);
          payload = latest.payload;
        }
        status ??= latest?.status ?? profile.statuses.active;
      }
      const result = await writer.checkpoint({ source, status, payload });
      if (!result.ok) throw result.error;
      if (ctx.json)
        printJson(ctx.io, { outcome: result.outcome, runId, sequence: result.sequence, snapshotId: result.snapshotId, key: result.key });
      else ctx.io.stdout.write(`${result.outcome} ${runId} #${result.sequence} ${result.snapshotId} → ${result.key}\n`);
      return EXIT.ok;
    } finally {
      await writer.close();
    }
  },
};
