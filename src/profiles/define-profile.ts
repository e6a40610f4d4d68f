import { splitDocument } from '../codec/parts.js';
import { CheckpointError } from '../contract/errors.js';
import { assertRunId, newSnapshotId } from '../contract/ids.js';
import { isStandardSchema } from '../contract/standard-schema.js';
import type { ProfileLayout } from '../contract/layout.js';
import { joinHeldHead } from '../snapshot-io/held-batch.js';
import { withHistoryKeyFrom } from '../snapshot-io/layout-probe.js';
import { assertOptionsArgument } from '../contract/arguments.js';
import { type TriggerSpec, type ProfileDefinition, type Profile } from '../contract/profile.js';

/**
 * `check`, plus: the run's files must not land on (or under) a store-wide file of the
 * layout (`preserved_runs.json`, `retention_log.json`, whatever the layout names them), which
 * a run with that id would occupy, breaking every prune and `preserveRun` after it.
 */
function withStoreWideNames(layout: ProfileLayout, check: (runId: string) => void): (runId: string) => void {
  const storeWide = [layout.preservedRunsKey, layout.retentionLogKey]
    .filter((k): k is string => k !== undefined)
    .map((k) => k.toLowerCase());
  return (runId) => {
    check(runId);
    const latest = layout.latestKey(runId).toLowerCase();
    if (storeWide.some((k) => latest === k || latest.startsWith(`${k}/`))) {
      throw new CheckpointError('checkpoint_key_invalid', "run id names a store-wide file of the profile's layout and cannot name a run", {
        details: { length: runId.length },
      });
    }
  };
}

function configError(name: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `profile "${name}": ${why}`, { details: { profile: name } });
}

/** The profile's heartbeat: the declared one with its defaults, or the default `timer` heartbeat when the profile has that trigger. */
function resolveHeartbeat<P, T extends string, S extends string>(
  name: string,
  definition: ProfileDefinition<P, T, S>,
): Profile<P, T, S>['heartbeat'] {
  const triggers: Readonly<Record<string, TriggerSpec>> = definition.triggers;
  const declared =
    definition.heartbeat === undefined
      ? Object.hasOwn(triggers, 'timer')
        ? { source: 'timer' as T, intervalMs: 120_000 }
        : false
      : definition.heartbeat;
  if (declared && declared.whenUnchanged !== undefined && declared.whenUnchanged !== 'write' && declared.whenUnchanged !== 'skip') {
    throw configError(name, `heartbeat.whenUnchanged must be 'write' or 'skip'`);
  }
  if (declared && declared.payload !== undefined && typeof declared.payload !== 'function')
    throw configError(name, 'heartbeat.payload must be a function');
  const heartbeat = declared
    ? {
        source: declared.source,
        intervalMs: declared.intervalMs,
        whenUnchanged: declared.whenUnchanged ?? 'write',
        ...(declared.payload ? { payload: declared.payload } : {}),
      }
    : false;
  if (heartbeat && !Object.hasOwn(triggers, heartbeat.source as string))
    throw configError(name, `heartbeat source "${heartbeat.source}" is not a trigger`);
  if (heartbeat && !(heartbeat.intervalMs > 0)) throw configError(name, 'heartbeat interval must be positive');
  return heartbeat;
}

/**
 * Describes a checkpoint system so savepoint can write, retain and resume it. The
 * built-in profiles are made with it; use it for your own system too.
 *
 * @example
 * ```ts
 * const myProfile = defineProfile({
 *   name: 'myAgent',
 *   payload: z.object({ step: z.number() }),
 *   triggers: { step_done: {}, manual: {} },
 *   statuses: { all: ['running', 'done'], terminal: ['done'], active: 'running' },
 *   layout: standardLayout({ root: 'runs', history: historyBySnapshotId() }),
 *   document: myDocumentFormat,
 * });
 * ```
 */
export function defineProfile<P, const T extends string = string, const S extends string = string>(
  definition: ProfileDefinition<P, T, S>,
): Profile<P, T, S> {
  assertOptionsArgument(definition, 'defineProfile');
  const { name } = definition;
  if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(name ?? '')) throw configError(String(name), 'name must be an identifier');
  if (!isStandardSchema(definition.payload))
    throw configError(name, 'payload must be a Standard Schema (zod 3.24+ or 4, valibot, arktype, …)');
  const triggers: Readonly<Record<string, TriggerSpec>> = definition.triggers;
  if (Object.keys(triggers).length === 0) throw configError(name, 'declares no triggers');
  const { all, terminal, active } = definition.statuses;
  const statusSet = new Set<string>(all);
  for (const s of [...terminal, active]) if (!statusSet.has(s)) throw configError(name, `status "${s}" is not in statuses.all`);
  if (terminal.includes(active)) throw configError(name, 'the active status cannot be terminal');

  const heartbeat = resolveHeartbeat(name, definition);
  const coalesceWindowMs = definition.coalesceWindowMs ?? 3000;
  if (!(coalesceWindowMs >= 0)) throw configError(name, 'coalesceWindowMs must be >= 0');
  const maxSnapshotBytes = definition.maxSnapshotBytes ?? 10 * 1024 * 1024;
  if (!(maxSnapshotBytes > 0)) throw configError(name, 'maxSnapshotBytes must be positive');
  const terminalSet = new Set<string>(terminal);
  if (definition.dedup !== undefined && typeof definition.dedup !== 'boolean') throw configError(name, 'dedup must be a boolean');

  const profile: Profile<P, T, S> = {
    name,
    description: definition.description ?? '',
    payload: definition.payload,
    triggers: definition.triggers,
    statuses: definition.statuses,
    document: definition.document,
    layout: withHistoryKeyFrom(definition.layout),
    newSnapshotId: definition.newSnapshotId ?? ((ctx) => newSnapshotId(ctx.createdAtMs)),
    assertRunId: withStoreWideNames(definition.layout, definition.assertRunId ?? assertRunId),
    heartbeat,
    coalesceWindowMs,
    materialView: definition.materialView ?? ((payload) => payload),
    maxSnapshotBytes,
    onOversize: definition.onOversize ?? 'split',
    splitDocument: definition.splitDocument ?? splitDocument,
    compressHistory: definition.compressHistory ?? true,
    immutableHistory: definition.immutableHistory ?? false,
    dedup: definition.dedup ?? false,
    ...(definition.retention ? { retention: definition.retention } : {}),
    ...(definition.resume ? { resume: definition.resume } : {}),
    joinHeldHead: definition.joinHeldHead ?? joinHeldHead,
    ...(definition.sharedFiles !== undefined ? { sharedFiles: definition.sharedFiles } : {}),
    ...(definition.indexEveryCheckpointUpTo !== undefined ? { indexEveryCheckpointUpTo: definition.indexEveryCheckpointUpTo } : {}),
    isTerminal: (status) => terminalSet.has(status),
    trigger(source) {
      const spec = Object.hasOwn(triggers, source) ? triggers[source] : undefined;
      if (!spec) {
        throw new CheckpointError(
          'checkpoint_schema_invalid',
          `profile "${name}" has no trigger "${source}"; valid: ${Object.keys(triggers).join(', ')}`,
          {
            details: { profile: name, source },
          },
        );
      }
      return spec;
    },
  };
  return Object.freeze(profile);
}
