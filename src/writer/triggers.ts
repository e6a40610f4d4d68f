import { canonicalJsonOf } from '../codec/canonical-json.js';
import { sha256HexOfPartsSync } from '../codec/sha256.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import type { Priority } from '../contract/snapshot.js';
import { issueKey, validateSync } from '../contract/standard-schema.js';
import type { Profile } from '../contract/profile.js';
import type { CheckpointInput } from './types.js';

/** What decides whether two checkpoints carry the same material state (see {@link sameMaterial}). */
export interface MaterialState {
  /** Canonical JSON of `{ material: materialView(payload), status }`, or its digest (see `materialText`). */
  readonly material: string;
  readonly status: string;
  /**
   * The payload's canonical text when the profile's material view is the payload itself (and
   * it holds no big strings by reference): `material` is then built around this very text,
   * so comparing it and `status` decides the same as comparing the keys — without
   * flattening a key of the payload's size on every checkpoint.
   */
  readonly payloadAsMaterial?: string;
}

/**
 * True when `a` and `b` carry the same material state: their keys are equal. Two keys built
 * around payload texts (`payloadAsMaterial`) are equal exactly when those texts and the
 * statuses are (a canonical JSON value followed by `,"status":` cannot be read two ways).
 */
export function sameMaterial(a: MaterialState, b: MaterialState): boolean {
  if (a.payloadAsMaterial !== undefined && b.payloadAsMaterial !== undefined)
    return a.status === b.status && a.payloadAsMaterial === b.payloadAsMaterial;
  return a.material === b.material;
}

/** A checkpoint request that passed validation, frozen at call time. */
export interface ValidatedTrigger extends MaterialState {
  readonly source: string;
  readonly status: string;
  /**
   * The payload's canonical JSON, taken at call time. It is the writer's private copy (the
   * agent may mutate its object after calling `checkpoint()`) and the text that is stored:
   * no object copy is made, and nothing is keyed on the agent's object.
   */
  readonly payloadText: string;
  /** The pieces of `payloadText` when it holds big strings by reference (see `canonicalJsonOf`): what the encoder writes, so the text is never flattened. */
  readonly payloadPieces?: readonly string[];
  readonly priority?: Priority;
  /** Clock time of the call, in epoch ms. */
  readonly at: number;
  /** Canonical JSON of the material state (see `materialText`). */
  readonly material: string;
  /**
   * Path of the first payload value JSON keeps only converted (a `Date`, stored as its ISO
   * string), when there is one: the writer refuses it or warns (`WriterOptions.nonJson`).
   */
  readonly convertedAt?: string;
}

function jsonPath(path: readonly Parameters<typeof issueKey>[0][] = []): string {
  let out = '$';
  for (const segment of path) {
    const part = issueKey(segment);
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z_$][\w$]*$/.test(part)) out += `.${part}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

/**
 * The material state of a checkpoint as canonical JSON: its status and the profile's
 * `materialView` of the payload (volatile fields left out). Two triggers with equal text
 * carry no material change (snapshot-lifecycle.md coalescing rule).
 */
export function materialText<P>(profile: Profile<P>, status: string, payload: P): string {
  return materialKey(status, profile.materialView(payload));
}

function materialKey(status: string, view: unknown): string {
  if (view === undefined) return canonicalJsonOf({ status }).text;
  // Built around the view's own text as validateTrigger builds it around the payload's: whether a
  // large text comes in pieces (and the key is then a digest) is decided on the same value on both
  // sides — a wrapper object counts a few values more (the text of a large value comes in pieces).
  const { text, pieces } = canonicalJsonOf(view);
  const tail = `,"status":${JSON.stringify(status)}}`;
  return (pieces && digestOfPieces(['{"material":', ...pieces, tail])) ?? `{"material":${text}${tail}`;
}

/**
 * A material text that holds big strings by reference (see `canonicalJsonOf`) is compared by
 * its SHA-256, hashed piece by piece: comparing two such texts would copy both whole (the
 * second checkpoint of a 64 MiB payload would flatten both to compare them). Undefined where no
 * synchronous hash exists (the text is compared then).
 */
function digestOfPieces(pieces: readonly string[]): string | undefined {
  const digest = sha256HexOfPartsSync(pieces);
  return digest === undefined ? undefined : `sha256:${digest}`;
}

/**
 * Validates a checkpoint request against the profile: the source must be one of its
 * triggers, the status one of its statuses, the payload must pass its schema (any Standard Schema) and be
 * storable as JSON. Every failure is `checkpoint_schema_invalid` with the JSON paths of the
 * offending values in `details.paths` (never the values themselves).
 */
export function validateTrigger<P>(profile: Profile<P>, input: CheckpointInput<P>, at: number): ValidatedTrigger {
  if (input === null || typeof input !== 'object') {
    throw new CheckpointError('checkpoint_schema_invalid', 'checkpoint() needs { source, status, payload }');
  }
  const { source, status } = input;
  if (typeof source !== 'string') throw new CheckpointError('checkpoint_schema_invalid', 'checkpoint source must be a string');
  const spec = profile.trigger(source);
  if (typeof status !== 'string' || !profile.statuses.all.includes(status)) {
    throw new CheckpointError(
      'checkpoint_schema_invalid',
      `profile "${profile.name}" has no status ${JSON.stringify(String(status))}; valid: ${profile.statuses.all.join(', ')}`,
      {
        details: { profile: profile.name, paths: ['$.status'] },
      },
    );
  }
  const parsed = validateSync(profile.payload, input.payload);
  if (parsed.issues) {
    const issues = parsed.issues;
    const paths = issues.slice(0, 20).map((i) => jsonPath(i.path));
    // Paths only: a schema library's message may quote the rejected value (valibot: "received 7"),
    // and a payload may hold secrets, which must never reach an error.
    throw new CheckpointError(
      'checkpoint_schema_invalid',
      `payload does not match profile "${profile.name}" at ${paths.slice(0, 5).join(', ')}`,
      {
        details: { profile: profile.name, paths },
      },
    );
  }
  let payloadText: string;
  let material: string;
  let convertedAt: string | undefined;
  let payloadPieces: readonly string[] | undefined;
  let payloadAsMaterial: string | undefined;
  try {
    ({ text: payloadText, convertedAt, pieces: payloadPieces } = canonicalJsonOf(parsed.value));
    const view = profile.materialView(parsed.value);
    const tail = `,"status":${JSON.stringify(status)}}`;
    // The same text (and key) materialText makes of { status, material: view }.
    if (view !== parsed.value) material = materialKey(status, view);
    else {
      material = (payloadPieces && digestOfPieces(['{"material":', ...payloadPieces, tail])) ?? `{"material":${payloadText}${tail}`;
      if (!payloadPieces) payloadAsMaterial = payloadText;
    }
  } catch (err) {
    if (isCheckpointError(err)) throw err;
    throw new CheckpointError('checkpoint_schema_invalid', 'payload cannot be stored as JSON', { cause: err });
  }
  // One shape for every trigger (absent members undefined), read many times on the hot path.
  return { source, status, payloadText, payloadPieces, at, material, payloadAsMaterial, priority: spec.priority, convertedAt };
}
