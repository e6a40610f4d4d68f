import type { JsonObject } from './json.js';
import type { DocumentFormat } from './document-format.js';
import type { SplitOptions, SplitResult } from './split.js';
import type { Priority } from './snapshot.js';
import type { StandardSchemaV1 } from './standard-schema.js';
import type { ResumeRule } from './resume-rule.js';
import type { RetentionPolicy } from './retention-policy.js';
import type { ProfileLayout } from './layout.js';
import type { HeldHeadJoin } from './held-batch.js';

/**
 * What a heartbeat does when the run's state has not changed since its newest snapshot:
 * store it again (`'write'`) or store nothing (`'skip'`). See {@link ProfileDefinition.heartbeat}.
 */
export type HeartbeatWhenUnchanged = 'write' | 'skip';

/** A trigger a profile accepts as a snapshot `source`. */
export interface TriggerSpec {
  /** Priority from the spec (phased-workflow-github.md: critical / high / medium). */
  readonly priority?: Priority;
  /** What fires it, in the spec's words. */
  readonly description?: string;
  /**
   * How a resume treats a snapshot with this source, when that differs between triggers
   * (phased-workflow-github.md: `phase_complete` resumes at the next phase, `gate_decision`
   * at the gate, everything else at the start of the phase). Resume reads the snapshot's own
   * `source`, so two triggers whose `resumeAs` differ are never coalesced into one snapshot.
   * @default undefined: every trigger without one resumes alike (and may coalesce with another)
   */
  readonly resumeAs?: string;
}

/** The statuses a profile's documents may carry; `S` is their names as a union of literals. */
export interface StatusSpec<S extends string = string> {
  /** Every valid status. */
  readonly all: readonly [S, ...S[]];
  /** Statuses that end a run (heartbeat stops; retention may preserve the latest of each). */
  readonly terminal: readonly NoInfer<S>[];
  /** The status during which the heartbeat runs (snapshot-lifecycle.md: "while a plan is in_progress"). */
  readonly active: NoInfer<S>;
}

/**
 * A payload schema: any Standard Schema (https://standardschema.dev) whose output is `P` —
 * zod 3.24+ or 4, valibot, arktype, or your own. Its `validate` must answer synchronously.
 */
export type PayloadSchema<P> = StandardSchemaV1<unknown, P>;

/** Input of {@link ProfileDefinition.newSnapshotId}. */
export interface SnapshotIdContext {
  readonly runId: string;
  readonly sequence: number;
  readonly source: string;
  readonly createdAtMs: number;
}

/**
 * Everything that makes savepoint speak one checkpoint system. See {@link defineProfile}.
 * `T` and `S` are the trigger and status names; `defineProfile` infers them as literal
 * types, so a misspelt `source` or `status` given to a writer of the profile does not compile.
 */
export interface ProfileDefinition<P, T extends string = string, S extends string = string> {
  /** Stable name (`snapshotLifecycle`, `phasedWorkflow`, …), used by the CLI's `--profile`. */
  readonly name: string;
  /** One line for docs and `--help`. */
  readonly description?: string;
  /** Schema of the payload the agent passes to `checkpoint()`: any Standard Schema (zod, valibot, arktype, …). */
  readonly payload: PayloadSchema<P>;
  /** Valid triggers: an unknown `source` is `checkpoint_schema_invalid`. */
  readonly triggers: Readonly<Record<T, TriggerSpec>>;
  readonly statuses: StatusSpec<S>;
  /** How a snapshot becomes bytes and back. */
  readonly document: DocumentFormat<P>;
  /** Where things are kept. */
  readonly layout: ProfileLayout;
  /** New snapshot id. @default `cp_<timestamp>_<suffix>` (snapshot-lifecycle.md) */
  readonly newSnapshotId?: (context: SnapshotIdContext) => string;
  /** Checks a run id, throwing `checkpoint_key_invalid`. @default a single portable path segment */
  readonly assertRunId?: (runId: string) => void;
  /**
   * The heartbeat trigger and its period, or `false` for none. `whenUnchanged` says what a beat
   * does when the run's state has not changed since its newest snapshot: `'write'` stores it
   * again (a spec that asks for a periodic snapshot, such as snapshot-lifecycle.md), `'skip'`
   * stores nothing (the `heartbeat` event still fires and the run lease is renewed by its own
   * timer). `payload` derives a beat's state from the last payload given, for fields that
   * mean "since the previous snapshot" (snapshot-lifecycle.md's `command_outcomes`: a beat
   * carries none the writer knows of); the writer's `heartbeatPayload` option overrides it.
   * @default { source: 'timer', intervalMs: 120_000, whenUnchanged: 'write' } when the profile has a `timer` trigger
   */
  readonly heartbeat?:
    | { readonly source: NoInfer<T>; readonly intervalMs: number; readonly whenUnchanged?: HeartbeatWhenUnchanged; payload?(last: P): P }
    | false;
  /** Coalescing window (snapshot-lifecycle.md: 3 s). @default 3000 */
  readonly coalesceWindowMs?: number;
  /**
   * The part of a payload that counts as material state for coalescing. Volatile fields
   * (timestamps, heartbeat counters) are left out here. @default the whole payload
   */
  readonly materialView?: (payload: P) => unknown;
  /** Largest stored document in bytes (phased-workflow-github.md: 10 MB). @default 10 * 1024 * 1024 */
  readonly maxSnapshotBytes?: number;
  /** Over the size limit: split large fields into part files, or reject with `checkpoint_too_large`. @default 'split' */
  readonly onOversize?: 'split' | 'reject';
  /**
   * How an oversized JSON document is split when `onOversize` is `'split'`: the main
   * document and the part files it references. A profile whose spec says what to split
   * first (phased-workflow-github.md: `phase_outputs`) supplies its own.
   * The writer passes `{ owned: true }`: the document is its private parse, which the hook may
   * change in place instead of copying it first.
   * @default splitDocument (largest values first)
   */
  readonly splitDocument?: (
    document: JsonObject,
    maxBytes: number,
    partKey: (n: number) => string,
    options?: SplitOptions,
  ) => Promise<SplitResult>;
  /**
   * Documents of 16 KiB and more are stored as content chunks shared store-wide (docs/storage.md,
   * "Content chunks"); only savepoint's read path reassembles them, so a profile whose files other
   * tools read leaves it off. The writer's `dedup` option overrides it. @default false
   */
  readonly dedup?: boolean;
  /** History entries may be gzipped by retention (never `latest`). @default true */
  readonly compressHistory?: boolean;
  /**
   * History entries are never rewritten once written (snapshot-lifecycle.md: "immutable
   * history"). A trigger coalesced into a snapshot whose history entry exists then goes to
   * `latest` only (its `source_details` grows there), and the next snapshot's history entry
   * repeats those records, each tagged `coalesced_into: <snapshot id>`, so every trigger stays
   * in `latest` or history. Without it the writer rewrites the still-open history entry (and
   * `latest`) in place. @default false
   */
  readonly immutableHistory?: boolean;
  /** The profile's default retention policy. */
  readonly retention?: RetentionPolicy;
  /** Where to resume from a restored snapshot. */
  readonly resume?: ResumeRule<P>;
  /**
   * How checkpoints join the run's newest snapshot into one batch file (the layout's
   * `batchKey`) while a buffered store still holds that snapshot's file locally (held-batch.ts).
   * @default joinHeldHead
   */
  readonly joinHeldHead?: HeldHeadJoin;
  /**
   * Who else reads this profile's files straight from the store, for a spec whose files other
   * tools must read as written (one clause: "n8n-style orchestrators read cp_NNN files"). Such
   * files are *read in place*: the writer acknowledges a checkpoint only once its files are
   * there, on a store that answers a write before writing its files (fsStorage's journal
   * applies them first; see `BufferedStorage.applied`); and a store that holds values no other
   * tool reads (`capabilities.opaqueValues`: an encrypted store) refuses the profile with this
   * reason, unless its user accepted it. @default undefined (savepoint alone reads the files)
   */
  readonly sharedFiles?: string;
  /**
   * The run index (`index.json`) is rewritten with every checkpoint while it lists at most this
   * many entries, so after a crash its highest sequence is the last acknowledged checkpoint
   * (phased-workflow-github.md's node 8 adds each checkpoint to the index after its write).
   * Beyond it, a long run's index is rewritten every max(1, n/16) checkpoints (its bytes per
   * checkpoint would otherwise grow with the run); readers reconcile from a listing.
   * @default 0 (the geometric cadence from the first entry)
   */
  readonly indexEveryCheckpointUpTo?: number;
}

/**
 * A validated, frozen profile with every default filled in. `P` is the payload type, `T`
 * the trigger names and `S` the status names (`string` when not known).
 */
export interface Profile<P = unknown, T extends string = string, S extends string = string> extends Required<
  Omit<
    ProfileDefinition<P, T, S>,
    'description' | 'retention' | 'resume' | 'heartbeat' | 'joinHeldHead' | 'dedup' | 'sharedFiles' | 'indexEveryCheckpointUpTo'
  >
> {
  /** See {@link ProfileDefinition.sharedFiles}. */
  readonly sharedFiles?: string;
  /** See {@link ProfileDefinition.indexEveryCheckpointUpTo}. */
  readonly indexEveryCheckpointUpTo?: number;
  readonly description: string;
  /** See {@link ProfileDefinition.dedup}; absent means off. */
  readonly dedup?: boolean;
  readonly heartbeat:
    { readonly source: T; readonly intervalMs: number; readonly whenUnchanged: HeartbeatWhenUnchanged; payload?(last: P): P } | false;
  readonly retention?: RetentionPolicy;
  readonly resume?: ResumeRule<P>;
  /** See {@link ProfileDefinition.joinHeldHead}; absent on a profile not made by `defineProfile`, which then never joins held files. */
  readonly joinHeldHead?: HeldHeadJoin;
  /** True when `status` ends a run. */
  isTerminal(status: string): boolean;
  /** The trigger spec of `source`; throws `checkpoint_schema_invalid` for a source the profile does not declare. */
  trigger(source: string): TriggerSpec;
}

/** The payload type of a profile. */
export type PayloadOf<T> = T extends Profile<infer P, infer _T, infer _S> ? P : never;

/** The trigger names of a profile, as a union of literals. */
export type TriggerOf<T> = T extends Profile<infer _P, infer N, infer _S> ? N : never;

/** The status names of a profile, as a union of literals. */
export type StatusOf<T> = T extends Profile<infer _P, infer _T, infer N> ? N : never;
