import { CheckpointError } from '../../model/errors.js';
import { PHASE_KEYS, PHASE_PATTERN, type PhaseKey, type PhaseOutputs } from './schema.js';

/** A `phase` value taken apart. */
export interface ParsedPhase {
  /** The `phase_outputs` key (`phase_0_5`). */
  readonly key: PhaseKey;
  /** The phase number (`0.5` for `phase_0_5`). */
  readonly number: number;
  /** The name after the number (`discovery`). */
  readonly name: string;
}

/** `phase_{number}_{name}` for a phase key and a name, e.g. `phaseId('phase_3', 'build')` → `phase_3_build`. */
export function phaseId(key: PhaseKey, name: string): string {
  const id = `${key}_${name}`;
  if (!PHASE_PATTERN.test(id)) throw new CheckpointError('checkpoint_schema_invalid', 'a phase name must start with a letter and hold only letters, digits, _ and -');
  return id;
}

/**
 * Takes a `phase` value apart. Names start with a letter, so `phase_0_5_x` is always
 * phase 0.5 named `x`, never phase 0 named `5_x`. `undefined` when `phase` does not match.
 */
export function parsePhase(phase: string): ParsedPhase | undefined {
  const m = /^(phase_(0_5|[0-8]))_([A-Za-z][A-Za-z0-9_-]*)$/.exec(phase);
  if (!m) return undefined;
  return { key: m[1] as PhaseKey, number: m[2] === '0_5' ? 0.5 : Number(m[2]), name: m[3]! };
}

/** The phase key after `key` in phase order, or `undefined` after `phase_8`. */
export function nextPhaseKey(key: PhaseKey): PhaseKey | undefined {
  return PHASE_KEYS[PHASE_KEYS.indexOf(key) + 1];
}

/** `phase_outputs` with every phase still `null`. */
export function emptyPhaseOutputs(): PhaseOutputs {
  return Object.fromEntries(PHASE_KEYS.map((k) => [k, null])) as PhaseOutputs;
}

/** The phase keys whose output is not `null`, in phase order. */
export function completedPhaseKeys(outputs: PhaseOutputs): PhaseKey[] {
  return PHASE_KEYS.filter((k) => outputs[k] !== null && outputs[k] !== undefined);
}
