import { CheckpointError } from '../../contract/errors.js';
import { renderHandoff } from './codec.js';
import { SEAL_KEY } from './seal.js';
import type { ArtifactEntry, HandoffDocument, PlayByPlayEntry } from './model.js';
import { assertObjectArgument, assertOptionsArgument, assertStringArgument } from '../../contract/arguments.js';

/** Counts the tokens of a text. Pass your model's real tokenizer (e.g. `(t) => encoding.encode(t).length`). */
export type TokenCounter = (text: string) => number;

/**
 * The default token estimate: one token per four ASCII characters (rounded up) plus one
 * per non-ASCII character. English prose and code average about four characters per
 * token with the BPE tokenizers of current models; non-Latin scripts and symbols (`→`,
 * `✓`) cost about one token or more per character. It is an estimate — pass a real
 * tokenizer as `countTokens` when the budget must be exact.
 */
export function estimateTokens(text: string): number {
  assertStringArgument(text, 'estimateTokens', 'text');
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    if (ch.charCodeAt(0) < 128) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 4) + other;
}

/**
 * A decision and its rationale. The rationale is what follows ` — `, ` – ` or ` -- ` on
 * the first line, plus any further lines of the item; the decision is the rest.
 * `Persistence: LocalStorage — works offline` → decision `Persistence: LocalStorage`.
 */
export function splitDecision(text: string): { decision: string; rationale?: string } {
  assertStringArgument(text, 'splitDecision', 'text');
  const [first = '', ...rest] = text.split('\n');
  const m = /^(.+?)\s+(?:—|–|--)\s+(.+)$/.exec(first);
  const decision = (m ? m[1]! : first).trim();
  const rationale = [m?.[2], ...rest]
    .filter((s): s is string => s !== undefined)
    .join('\n')
    .trim();
  return rationale === '' || decision === '' ? { decision: text } : { decision, rationale };
}

/** Options of {@link compress}. */
export interface CompressOptions {
  /** The budget for the whole rendered document (front matter included). */
  readonly maxTokens: number;
  /** Token counter. @default estimateTokens */
  readonly countTokens?: TokenCounter;
  /**
   * How many of the newest Play-By-Play entries and Artifact Trail rows count as
   * "recent" (Should Keep, kept detailed longest); older ones are Can Summarize.
   * @default 3
   */
  readonly keepRecent?: number;
  /**
   * Count the document as the `handoffMarkdown` profile stores it: with savepoint's seal
   * line in the front matter (at most {@link SEAL_LINE_MAX_TOKENS} tokens with
   * `estimateTokens`) and a millisecond `created`, so the stored file fits `maxTokens`.
   * `false` when you write the document yourself (`renderHandoff`) and store no seal.
   * @default true
   */
  readonly reserveSeal?: boolean;
}

/**
 * The longest seal line the `handoffMarkdown` profile writes (sequence up to 999999, its
 * longest trigger and status, a SHA-256 in base64url), which `compress` counts in.
 */
export const SEAL_LINE_PLACEHOLDER = `${SEAL_KEY}: 1.0 999999 phase_completion in_progress Z7qaepIvMDeBRX3RRi0wyvih2OBWF8aFjrB-dItt_8w`;
/** What savepoint's seal line costs at most with {@link estimateTokens}, its line break included. */
export const SEAL_LINE_MAX_TOKENS = 25;
/** A `created` as the writer stores it (milliseconds, `Z`): what `compress` counts when a document's own is shorter. */
const STORED_CREATED = '2000-01-01T00:00:00.000Z';

/** `doc` as the profile stores it, for counting: the longest seal line, and `created` at its stored length. */
function asStored(doc: HandoffDocument): HandoffDocument {
  const { [SEAL_KEY]: _own, ...frontMatter } = doc.frontMatter ?? {};
  const created = doc.created.length < STORED_CREATED.length ? STORED_CREATED : doc.created;
  return { ...doc, created, frontMatter: { ...frontMatter, [SEAL_KEY]: SEAL_LINE_PLACEHOLDER.slice(SEAL_KEY.length + 2) } };
}

/** Result of {@link compress}. */
export interface CompressResult {
  /** The document within budget (the input itself when it already fit). */
  readonly document: HandoffDocument;
  /** Tokens of the rendered result (as stored, seal line included, unless `reserveSeal: false`). */
  readonly tokens: number;
  /** Tokens of the input. */
  readonly originalTokens: number;
  /** Tokens of the Must Keep part alone (every compressible section emptied). */
  readonly mustKeepTokens: number;
  /** What was cut, in order, e.g. `summarized 4 older Play-By-Play entries`. Empty when nothing was. */
  readonly actions: readonly string[];
}

interface Level {
  extras: number;
  pbpFolded: number;
  pbpDropped: boolean;
  completedDropped: number;
  rationales: number;
  techDropped: number;
  activeDropped: number;
  artifactsCleared: boolean;
}

function summaryEntry(entries: readonly PlayByPlayEntry[]): PlayByPlayEntry {
  const first = entries[0]!;
  const last = entries[entries.length - 1]!;
  const phase =
    first.phase === last.phase
      ? first.phase
      : first.phase === ''
        ? last.phase
        : last.phase === ''
          ? first.phase
          : `${first.phase} … ${last.phase}`;
  return { phase, action: `${entries.length} earlier actions (summarized)`, outcome: last.outcome };
}

/**
 * Fits a hand-off document into `maxTokens` following the spec's Information Priority
 * Hierarchy. Nothing is cut when the document already fits (so compressing a compressed
 * document under the same budget changes nothing). Otherwise, one step at a time and
 * re-counting after each, it cuts in this order until the document fits:
 *
 * 1. **Can Summarize** — sections outside the spec (newest first); older Play-By-Play
 *    entries (all but the `keepRecent` newest) folded, oldest first, into one summary
 *    entry; completed Artifact Trail rows (not among the `keepRecent` newest and not
 *    mentioned in Current State or Next Actions) dropped oldest first behind one
 *    summary row; the rationale of historical decisions (see {@link splitDecision}),
 *    oldest first.
 * 2. **Should Keep** — Technical Context items, last first; the recent Play-By-Play
 *    entries folded into the summary, then the summary itself; recent and active
 *    Artifact Trail rows, oldest first, then the summary row.
 * 3. **Must Keep** — never cut: Problem, Session Intent, every decision (its rationale
 *    may go), Current State, Next Actions; also User Rules (constraints the agent must
 *    follow, which the spec's hierarchy does not rank) and the front matter.
 *
 * If the Must Keep part alone exceeds the budget, throws `checkpoint_too_large` with
 * `details: { maxTokens, mustKeepTokens }` instead of dropping any of it.
 *
 * @example
 * ```ts
 * const { document, tokens, actions } = compress(doc, { maxTokens: 2000 });
 * // with a real tokenizer: compress(doc, { maxTokens: 2000, countTokens: (t) => enc.encode(t).length })
 * ```
 */
export function compress(doc: HandoffDocument, options: CompressOptions): CompressResult {
  assertObjectArgument(doc, 'compress', 'doc');
  assertOptionsArgument(options, 'compress');
  const { maxTokens } = options;
  const count = options.countTokens ?? estimateTokens;
  const keepRecent = options.keepRecent ?? 3;
  if (!(Number.isFinite(maxTokens) && maxTokens > 0))
    throw new CheckpointError('checkpoint_config_invalid', 'compress: maxTokens must be a positive number');
  if (!(Number.isInteger(keepRecent) && keepRecent >= 0))
    throw new CheckpointError('checkpoint_config_invalid', 'compress: keepRecent must be an integer >= 0');
  const reserve = options.reserveSeal ?? true;
  const tokensOf = (d: HandoffDocument): number => count(renderHandoff(reserve ? asStored(d) : d));

  const originalTokens = tokensOf(doc);
  const parts = compressibleParts(doc, keepRecent);
  const steps = cutSteps(parts);
  const floorLevel = initialLevel();
  for (const step of steps) step(floorLevel);
  const mustKeepTokens = tokensOf(buildAtLevel(parts, floorLevel));

  if (originalTokens <= maxTokens) return { document: doc, tokens: originalTokens, originalTokens, mustKeepTokens, actions: [] };
  if (mustKeepTokens > maxTokens) {
    throw new CheckpointError(
      'checkpoint_too_large',
      `the Must Keep part of the hand-off (Problem, Session Intent, Decisions, Current State, Next Actions, User Rules) needs ${mustKeepTokens} tokens, over the budget of ${maxTokens}`,
      { details: { maxTokens, mustKeepTokens, originalTokens } },
    );
  }

  const level = initialLevel();
  let document = doc;
  let tokens = originalTokens;
  for (const step of steps) {
    step(level);
    document = buildAtLevel(parts, level);
    tokens = tokensOf(document);
    if (tokens <= maxTokens) break;
  }
  return { document, tokens, originalTokens, mustKeepTokens, actions: describe(level, parts.pbp.length, parts.olderPbp) };
}

/** What of a hand-off may be cut, by position: found once, then cut level by level. */
interface CompressibleParts {
  readonly doc: HandoffDocument;
  readonly extras: NonNullable<HandoffDocument['extraSections']>;
  readonly pbp: readonly PlayByPlayEntry[];
  /** Play-By-Play entries older than the `keepRecent` newest. */
  readonly olderPbp: number;
  /** Artifact Trail rows neither recent nor mentioned in Current State or Next Actions, then the others. */
  readonly completedIdx: readonly number[];
  readonly activeIdx: readonly number[];
  /** Decisions with a rationale that may go. */
  readonly withRationale: readonly number[];
}

function compressibleParts(doc: HandoffDocument, keepRecent: number): CompressibleParts {
  const pbp = doc.playByPlay;
  const mentions = [...doc.currentState, ...doc.nextActions].join('\n');
  const recentFrom = Math.max(0, doc.artifactTrail.length - keepRecent);
  const isActive = (e: ArtifactEntry, i: number): boolean => i >= recentFrom || mentions.includes(e.file.trim());
  return {
    doc,
    extras: doc.extraSections ?? [],
    pbp,
    olderPbp: Math.max(0, pbp.length - keepRecent),
    completedIdx: doc.artifactTrail.map((e, i) => (isActive(e, i) ? -1 : i)).filter((i) => i >= 0),
    activeIdx: doc.artifactTrail.map((e, i) => (isActive(e, i) ? i : -1)).filter((i) => i >= 0),
    withRationale: doc.decisions.map((d, i) => (splitDecision(d).rationale !== undefined ? i : -1)).filter((i) => i >= 0),
  };
}

function initialLevel(): Level {
  return {
    extras: 0,
    pbpFolded: 0,
    pbpDropped: false,
    completedDropped: 0,
    rationales: 0,
    techDropped: 0,
    activeDropped: 0,
    artifactsCleared: false,
  };
}

/** Every step the hierarchy allows, lowest priority first; the last leaves Must Keep alone. */
function cutSteps(parts: CompressibleParts): ((l: Level) => void)[] {
  const { doc, extras, pbp, olderPbp, completedIdx, activeIdx, withRationale } = parts;
  const steps: ((l: Level) => void)[] = [];
  for (let i = 0; i < extras.length; i++) steps.push((l) => void l.extras++);
  for (let k = 2; k <= olderPbp; k++) steps.push((l) => void (l.pbpFolded = k));
  for (let i = 0; i < completedIdx.length; i++) steps.push((l) => void l.completedDropped++);
  for (let i = 0; i < withRationale.length; i++) steps.push((l) => void l.rationales++);
  for (let i = 0; i < doc.technicalContext.length; i++) steps.push((l) => void l.techDropped++);
  for (let k = Math.max(2, olderPbp + 1); k <= pbp.length; k++) steps.push((l) => void (l.pbpFolded = k));
  if (pbp.length > 0) steps.push((l) => void (l.pbpDropped = true));
  for (let i = 0; i < activeIdx.length; i++) steps.push((l) => void l.activeDropped++);
  if (doc.artifactTrail.length > 0) steps.push((l) => void (l.artifactsCleared = true));
  return steps;
}

/** The document with everything `level` cuts cut. */
function buildAtLevel(parts: CompressibleParts, level: Level): HandoffDocument {
  const { doc, extras, pbp } = parts;
  const keptExtras = extras.slice(0, extras.length - level.extras);
  let playByPlay: PlayByPlayEntry[];
  if (level.pbpDropped) playByPlay = [];
  else if (level.pbpFolded >= 2) playByPlay = [summaryEntry(pbp.slice(0, level.pbpFolded)), ...pbp.slice(level.pbpFolded)];
  else playByPlay = [...pbp];
  let artifactTrail: ArtifactEntry[] = [];
  if (!level.artifactsCleared) {
    const dropped = new Set([...parts.completedIdx.slice(0, level.completedDropped), ...parts.activeIdx.slice(0, level.activeDropped)]);
    artifactTrail = doc.artifactTrail.filter((_, i) => !dropped.has(i));
    if (level.completedDropped > 0) {
      artifactTrail.unshift({
        file: '…',
        status: 'summarized',
        keyChange: `${level.completedDropped} completed entr${level.completedDropped === 1 ? 'y' : 'ies'} omitted`,
      });
    }
  }
  const stripped = new Set(parts.withRationale.slice(0, level.rationales));
  const { extraSections: _e, ...rest } = doc;
  return {
    ...rest,
    decisions: doc.decisions.map((d, i) => (stripped.has(i) ? splitDecision(d).decision : d)),
    technicalContext: doc.technicalContext.slice(0, doc.technicalContext.length - level.techDropped),
    playByPlay,
    artifactTrail,
    ...(keptExtras.length > 0 ? { extraSections: keptExtras } : {}),
  };
}

function describe(l: Level, pbpCount: number, olderPbp: number): string[] {
  const out: string[] = [];
  const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
  if (l.extras > 0) out.push(`dropped ${plural(l.extras, 'section', 'sections')} outside the spec`);
  if (l.pbpFolded >= 2 && !l.pbpDropped) {
    out.push(
      `summarized ${plural(l.pbpFolded, 'Play-By-Play entry', 'Play-By-Play entries')} (${Math.min(l.pbpFolded, olderPbp)} older, ${Math.max(0, l.pbpFolded - olderPbp)} recent)`,
    );
  }
  if (l.completedDropped > 0)
    out.push(`summarized ${plural(l.completedDropped, 'completed Artifact Trail entry', 'completed Artifact Trail entries')}`);
  if (l.rationales > 0) out.push(`removed the rationale of ${plural(l.rationales, 'historical decision', 'historical decisions')}`);
  if (l.techDropped > 0) out.push(`dropped ${plural(l.techDropped, 'Technical Context item', 'Technical Context items')}`);
  if (l.pbpDropped) out.push(`dropped all ${plural(pbpCount, 'Play-By-Play entry', 'Play-By-Play entries')}`);
  if (l.artifactsCleared) out.push('dropped the whole Artifact Trail');
  else if (l.activeDropped > 0)
    out.push(`dropped ${plural(l.activeDropped, 'recent Artifact Trail entry', 'recent Artifact Trail entries')}`);
  return out;
}
