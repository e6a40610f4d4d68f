import { readSnapshot } from '../../snapshot-io/read-snapshot.js';
import type { Snapshot } from '../../contract/snapshot.js';
import { runArgument, runFilesOf, stringFlag, type Command } from '../command.js';
import { CliError, EXIT, notFound, printJson } from '../io.js';
import { loadRunSnapshots } from '../../runs/inspect.js';

/** `savepoint show RUN [--seq N | --id ID]` */
export const showCommand: Command = {
  name: 'show',
  usage: 'RUN [--seq N | --id ID]',
  maxPositionals: 1,
  summary: 'Show one snapshot (the latest by default)',
  options: {
    seq: { type: 'string', value: 'N', description: 'The snapshot with this sequence number' },
    id: { type: 'string', value: 'ID', description: 'The snapshot with this id' },
  },
  async run(ctx) {
    const runId = runArgument(ctx, 'show');
    const seqFlag = stringFlag(ctx, 'seq');
    const idFlag = stringFlag(ctx, 'id');
    if (seqFlag !== undefined && idFlag !== undefined) throw new CliError('give --seq or --id, not both');
    const seq = seqFlag === undefined ? undefined : Number(seqFlag);
    if (seq !== undefined && !(Number.isInteger(seq) && seq >= 1)) throw new CliError('--seq takes a positive integer');

    let snapshot: Snapshot<unknown> | undefined;
    let key: string;
    if (seq === undefined && idFlag === undefined) {
      key = ctx.profile.layout.latestKey(runId);
      snapshot = await readSnapshot(ctx.storage, ctx.profile, key);
      if (!snapshot) {
        await runFilesOf(ctx, runId); // a run that is not there is named as such
        throw notFound(`run "${runId}" has no latest snapshot: name one with --seq N or --id ID`);
      }
    } else {
      const run = await runFilesOf(ctx, runId);
      const rows = await loadRunSnapshots(ctx.storage, ctx.profile, run);
      const found = rows.find((r) => r.snapshot && (seq !== undefined ? r.snapshot.sequence === seq : r.snapshot.id === idFlag));
      if (!found?.snapshot)
        throw notFound(`run "${runId}" has no valid snapshot with ${seq !== undefined ? `sequence ${seq}` : `id ${idFlag}`}`);
      snapshot = found.snapshot;
      key = found.key;
    }
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
