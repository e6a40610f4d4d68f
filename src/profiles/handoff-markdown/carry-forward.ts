import type { JsonValue } from '../../contract/json.js';
import { systemClock, toRfc3339, type Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import type { ArtifactEntry, ExtraSection, HandoffDocument, PlayByPlayEntry } from './model.js';
import { assertObjectArgument, assertOptionsArgument, assertSchemaArgument } from '../../contract/arguments.js';
import { HandoffDocumentSchema } from './model.js';

/** Front-matter keys savepoint writes into stored documents (its seal line, coalesced triggers, and the separate keys an earlier version wrote); they describe one snapshot and are never carried forward. */
export const SAVEPOINT_FRONT_MATTER_KEYS = [
  'savepoint',
  'savepoint_coalesced',
  'run_id',
  'sequence',
  'source',
  'source_details',
  'priority',
  'status',
  'integrity',
] as const;

/**
 * What changed since the previous checkpoint. Only `currentState` and `nextActions` are
 * required: the spec replaces them entirely at every checkpoint. Everything else follows
 * the spec's compression-behaviour table (see {@link nextCheckpoint}).
 */
export interface HandoffUpdate {
  /** Id of the new checkpoint. @default the previous id with its number incremented (`chk-003` → `chk-004`) */
  readonly checkpoint?: string;
  /** ISO-8601 creation time. @default now, from `options.clock` */
  readonly created?: string;
  /** What the new checkpoint summarizes up to. @default none (an anchor belongs to one checkpoint) */
  readonly anchor?: string;
  /** A new problem statement. @default the previous one (the spec: "rarely changes; copy forward") */
  readonly problem?: string;
  /** The new goal, only when the goal shifted. @default the previous Session Intent */
  readonly sessionIntent?: string;
  /** Decisions made since the previous checkpoint; appended, never replacing earlier ones. @default none */
  readonly decisions?: readonly string[];
  /**
   * The Technical Context: a list replaces it, `{ add, remove }` edits it (exact item text).
   * @default the previous Technical Context
   */
  readonly technicalContext?: readonly string[] | { readonly add?: readonly string[]; readonly remove?: readonly string[] };
  /** Major actions completed since the previous checkpoint; appended. @default none */
  readonly playByPlay?: readonly PlayByPlayEntry[];
  /** Files touched since the previous checkpoint; an entry for a file already in the trail replaces it and moves to the end. @default none */
  readonly artifactTrail?: readonly ArtifactEntry[];
  /**
   * Which earlier trail entries are completed or irrelevant and are pruned (entries touched
   * in this update are always kept): a list of file paths, a predicate, or `'inactive'` —
   * every entry whose path appears neither in this update's trail nor in the new Current
   * State or Next Actions.
   * @default none pruned
   */
  readonly pruneArtifacts?: readonly string[] | 'inactive' | ((entry: ArtifactEntry) => boolean);
  /** What exists now; replaces the previous Current State entirely. */
  readonly currentState: readonly string[];
  /** What comes next; replaces the previous Next Actions entirely. */
  readonly nextActions: readonly string[];
  /** New User Rules, or `null` to remove them. @default the previous User Rules (copied forward unless changed) */
  readonly userRules?: readonly string[] | null;
  /** Sections outside the spec. @default the previous ones */
  readonly extraSections?: readonly ExtraSection[];
  /** Extra front-matter keys. @default the previous ones, without savepoint's per-snapshot keys (`run_id`, `integrity`, …) */
  readonly frontMatter?: Readonly<Record<string, JsonValue>>;
}

/** Options of {@link nextCheckpoint}. */
export interface NextCheckpointOptions {
  /** Clock for the default `created`. @default systemClock */
  readonly clock?: Pick<Clock, 'now'>;
}

/**
 * The id after `id`: its trailing number incremented with the same zero padding
 * (`chk-003` → `chk-004`, `session-abc-099` → `session-abc-100`). Throws
 * `checkpoint_config_invalid` when `id` does not end in a number.
 */
export function nextCheckpointId(id: string): string {
  const m = /^(.*?)(\d+)$/.exec(id);
  if (!m)
    throw new CheckpointError('checkpoint_config_invalid', 'the previous checkpoint id does not end in a number; pass update.checkpoint');
  const next = String(Number(m[2]) + 1).padStart(m[2]!.length, '0');
  return `${m[1]}${next}`;
}

function appendUnique(base: readonly string[], added: readonly string[] | undefined): string[] {
  const out = [...base];
  const seen = new Set(base.map((s) => s.trim()));
  for (const item of added ?? []) {
    if (seen.has(item.trim())) continue;
    seen.add(item.trim());
    out.push(item);
  }
  return out;
}

/**
 * Builds checkpoint N+1 from checkpoint N and what changed, following the spec's
 * compression-behaviour table:
 *
 * | Section | Behaviour |
 * |---|---|
 * | Problem | copied forward (replaced only if `update.problem` is given) |
 * | Session Intent | updated only when the goal shifts (`update.sessionIntent`) |
 * | Decisions | accumulated: new ones appended, none ever dropped, duplicates not repeated |
 * | Technical Context | updated when changes occur (replace or add/remove) |
 * | Play-By-Play | new entries appended (older ones are summarized by `compress`, not here) |
 * | Artifact Trail | merged by file, completed/irrelevant entries pruned, active ones kept |
 * | Current State | replaced entirely |
 * | Next Actions | replaced entirely |
 * | User Rules | copied forward unless changed |
 *
 * @example
 * ```ts
 * const chk004 = nextCheckpoint(chk003, {
 *   decisions: ['Scoring: combo multiplier capped at 8x'],
 *   playByPlay: [{ phase: 'Phase 3', action: 'Implemented timer, scoring, combos', outcome: 'Complete' }],
 *   artifactTrail: [{ file: 'src/game/scoring.ts', status: 'created', keyChange: 'Combo scoring' }],
 *   currentState: ['Phases 1-3 complete'],
 *   nextActions: ['Phase 4: Offline mode', 'Blocked: None'],
 * });
 * ```
 */
export function nextCheckpoint(previous: HandoffDocument, update: HandoffUpdate, options: NextCheckpointOptions = {}): HandoffDocument {
  assertSchemaArgument(HandoffDocumentSchema, previous, 'nextCheckpoint', 'previous');
  assertObjectArgument(update, 'nextCheckpoint', 'update');
  assertOptionsArgument(options, 'nextCheckpoint');
  const clock = options.clock ?? systemClock;

  let technicalContext: string[];
  const tc = update.technicalContext;
  if (tc === undefined) technicalContext = [...previous.technicalContext];
  else if (Array.isArray(tc)) technicalContext = [...(tc as readonly string[])];
  else {
    const edit = tc as { readonly add?: readonly string[]; readonly remove?: readonly string[] };
    const removed = new Set((edit.remove ?? []).map((s) => s.trim()));
    technicalContext = appendUnique(
      previous.technicalContext.filter((t) => !removed.has(t.trim())),
      edit.add,
    );
  }

  const touched = new Set((update.artifactTrail ?? []).map((e) => e.file.trim()));
  const mentions = [...update.currentState, ...update.nextActions].join('\n');
  const prune = update.pruneArtifacts;
  const pruned = (entry: ArtifactEntry): boolean => {
    if (prune === undefined) return false;
    if (prune === 'inactive') return !mentions.includes(entry.file.trim());
    if (typeof prune === 'function') return prune(entry);
    return (prune as readonly string[]).some((f) => f.trim() === entry.file.trim());
  };
  // Within the update too, the last entry for a file wins.
  const updated = (update.artifactTrail ?? []).filter(
    (e, i, all) => !all.slice(i + 1).some((later) => later.file.trim() === e.file.trim()),
  );
  const artifactTrail = [
    ...previous.artifactTrail.filter((e) => !touched.has(e.file.trim()) && !pruned(e)),
    ...updated.map((e) => ({ ...e })),
  ];

  const carriedFrontMatter: Record<string, JsonValue> = { ...(update.frontMatter ?? previous.frontMatter ?? {}) };
  for (const key of SAVEPOINT_FRONT_MATTER_KEYS) delete carriedFrontMatter[key];

  const userRules =
    update.userRules === null
      ? undefined
      : update.userRules !== undefined
        ? [...update.userRules]
        : previous.userRules
          ? [...previous.userRules]
          : undefined;
  const extraSections = update.extraSections ?? previous.extraSections;

  return {
    checkpoint: update.checkpoint ?? nextCheckpointId(previous.checkpoint),
    created: update.created ?? toRfc3339(clock.now()),
    ...(update.anchor !== undefined ? { anchor: update.anchor } : {}),
    ...(Object.keys(carriedFrontMatter).length > 0 ? { frontMatter: carriedFrontMatter } : {}),
    problem: update.problem ?? previous.problem,
    sessionIntent: update.sessionIntent ?? previous.sessionIntent,
    decisions: appendUnique(previous.decisions, update.decisions),
    technicalContext,
    playByPlay: [...previous.playByPlay.map((e) => ({ ...e })), ...(update.playByPlay ?? []).map((e) => ({ ...e }))],
    artifactTrail,
    currentState: [...update.currentState],
    nextActions: [...update.nextActions],
    ...(userRules ? { userRules } : {}),
    ...(extraSections && extraSections.length > 0 ? { extraSections: extraSections.map((e) => ({ ...e })) } : {}),
  };
}
