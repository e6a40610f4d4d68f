import { hostname } from 'node:os';
import { toRfc3339 } from '../../contract/clock.js';
import { isCheckpointError } from '../../contract/errors.js';
import { formatDuration } from '../../contract/human-duration.js';
import { defaultIsProcessAlive, parseLock } from '../../writer/run-lock.js';
import { runArgument, runFilesOf, type Command, type CommandContext } from '../command.js';
import { CliError, EXIT, printJson } from '../io.js';

/** What a run's lock file says, as far as it can be read. */
interface LockInfo {
  readonly readable: boolean;
  readonly pid: number | null;
  readonly hostname: string | null;
  readonly acquiredAt: string | null;
  readonly leaseUntil: string | null;
  /** The lease has not ended and its holder is not known to be gone: a live writer renews it. */
  readonly live: boolean;
}

function lockInfo(bytes: Uint8Array, now: number): LockInfo {
  const doc = parseLock(bytes);
  // Not a lock savepoint can read: no holder can renew it, so it is never live.
  if (!doc) return { readable: false, pid: null, hostname: null, acquiredAt: null, leaseUntil: null, live: false };
  return {
    readable: true,
    pid: typeof doc.pid === 'number' ? doc.pid : null,
    hostname: typeof doc.hostname === 'string' ? doc.hostname : null,
    acquiredAt: typeof doc.acquired_at === 'string' ? doc.acquired_at : null,
    leaseUntil: toRfc3339(doc.lease_until),
    // A lease still running, unless its holder is known to be gone: a process of this host
    // that no longer exists (as the writer itself decides before taking a run over).
    live: doc.lease_until > now && !(doc.hostname === hostname() && typeof doc.pid === 'number' && !defaultIsProcessAlive(doc.pid)),
  };
}

/** "pid 42 on host-a (process running), lease ends in 20 s": what is known, never a guess. */
function describe(info: LockInfo, now: number): string {
  if (!info.readable) return 'an unreadable lock file';
  const here = info.hostname !== null && info.hostname === hostname();
  const running = here && info.pid !== null && defaultIsProcessAlive(info.pid) ? ', process running' : here ? ', no such process' : '';
  const left = Date.parse(info.leaseUntil!) - now;
  const lease = left > 0 ? `lease ends in ${formatDuration(left)}` : `lease ended ${formatDuration(-left)} ago`;
  return `pid ${info.pid ?? '?'} on ${here ? `this host (${info.hostname}${running})` : `host ${info.hostname ?? '?'}`}, ${lease}`;
}

/** `savepoint unlock RUN [--force]` */
export const unlockCommand: Command = {
  name: 'unlock',
  usage: 'RUN [--force]',
  maxPositionals: 1,
  summary: "Remove a run's writer lock left by a process that is gone (refuses a live holder without --force)",
  options: {
    force: {
      type: 'boolean',
      description: "Remove it even while its lease runs: the holder's next write fails with checkpoint_run_locked",
    },
  },
  async run(ctx: CommandContext) {
    const runId = runArgument(ctx, 'unlock');
    const key = ctx.profile.layout.lockKey(runId);
    const stored = await ctx.storage.get(key);
    if (!stored) {
      await runFilesOf(ctx, runId); // a run that is not there is named as such
      if (ctx.json) printJson(ctx.io, { runId, lock: null, removed: false, forced: false });
      else ctx.io.stdout.write(`run ${runId} is not locked\n`);
      return EXIT.ok;
    }
    const now = ctx.clock.now();
    const info = lockInfo(stored.bytes, now);
    const force = ctx.values.force === true;
    if (info.live && !force) {
      const message = `run ${runId} is held by ${describe(info, now)}; a live writer renews its lease. Stop that writer, wait for the lease to end, or pass --force`;
      throw new CliError(message, EXIT.locked, 'checkpoint_run_locked');
    }
    try {
      // Conditional: a holder that renews at this moment keeps its lock.
      await ctx.storage.delete(key, { ifVersion: stored.version });
    } catch (err) {
      if (isCheckpointError(err, 'checkpoint_conflict')) {
        throw new CliError(
          `the lock of run ${runId} changed while unlocking (its holder renewed it or another writer took it); nothing removed`,
          EXIT.locked,
          'checkpoint_run_locked',
        );
      }
      throw err;
    }
    if (ctx.json) printJson(ctx.io, { runId, lock: info, removed: true, forced: force && info.live });
    else
      ctx.io.stdout.write(
        `removed the lock of run ${runId}: ${describe(info, now)}${force && info.live ? " (forced: that writer's next write fails with checkpoint_run_locked)" : ''}\n`,
      );
    return EXIT.ok;
  },
};
