import { objectOf } from '../../resume/rule-helpers.js';
import { PHASE_KEYS } from './schema.js';

/** The phase keys of phased-workflow-github.md's `phase_outputs`, in workflow order (the schema's own list). */
export const PHASED_WORKFLOW_PHASE_KEYS = PHASE_KEYS;

/** A bare number key of `phase_outputs` (`phase_1`, `phase_0_5`), as opposed to a full phase name. */
export const KEY_PATTERN = /^phase_(\d+)(?:_(\d+))?$/;

function keyRank(key: string): [number, number] {
  const m = KEY_PATTERN.exec(key);
  return m ? [Number(m[1]), m[2] === undefined ? -1 : Number(m[2])] : [Number.MAX_SAFE_INTEGER, 0];
}

/** Orders number keys as the workflow runs them (`phase_0`, `phase_0_5`, `phase_1`, …). */
export function byRank(a: string, b: string): number {
  const [a1, a2] = keyRank(a);
  const [b1, b2] = keyRank(b);
  return a1 - b1 || a2 - b2 || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The number key (`phase_0_5`) of a phase name (`phase_0_5_research`). A `_<digits>`
 * after the major number counts as a minor number only when that key is one the
 * workflow knows (`phase_0_5`), so `phase_2_5_checks` stays `phase_2` unless a
 * `phase_2_5` exists.
 */
export function phaseKeyOf(phase: string, known: ReadonlySet<string>): string | undefined {
  const m = /^phase_(\d+)(?:_(\d+)(?=_|$))?(?=_|$)/.exec(phase);
  if (!m) return undefined;
  const minor = m[2] === undefined ? undefined : `phase_${m[1]}_${m[2]}`;
  if (minor !== undefined && known.has(minor)) return minor;
  return `phase_${m[1]}`;
}

/** A `phase_{number}_{name}` value (a full name, not a bare number key) found at `value`, if any. */
function fullPhaseName(value: unknown): string | undefined {
  return typeof value === 'string' && !KEY_PATTERN.test(value) && /^phase_\d+(?:_\d+)?_[A-Za-z]/.test(value) ? value : undefined;
}

/**
 * The full names a run's snapshots give its phases, by number key: each snapshot's `phase`,
 * its `current_phase_state.phase`, and a `phase` member of any phase output (read liberally:
 * other tools may record it there). The restored snapshot's own names win, then the newest
 * earlier snapshot's.
 */
export function phaseNamesSeen(payloads: readonly unknown[], known: Set<string>): Map<string, string> {
  const seen = new Map<string, string>();
  const add = (value: unknown): void => {
    const name = fullPhaseName(value);
    if (name === undefined) return;
    const key = phaseKeyOf(name, known);
    if (key === undefined || seen.has(key)) return;
    seen.set(key, name);
    known.add(key);
  };
  for (const payload of payloads) {
    const p = objectOf(payload);
    if (!p) continue;
    add(p.phase);
    const state = objectOf(p.state_snapshot);
    add(objectOf(state?.current_phase_state)?.phase);
    for (const output of Object.values(objectOf(state?.phase_outputs) ?? {})) add(objectOf(output)?.phase);
  }
  return seen;
}

/** The number keys a workflow knows: the spec's, and any other a snapshot's `phase_outputs` carries. */
export function knownPhaseKeys(outputs: Readonly<Record<string, unknown>>): Set<string> {
  return new Set<string>([...PHASED_WORKFLOW_PHASE_KEYS, ...Object.keys(outputs).filter((k) => KEY_PATTERN.test(k))]);
}
