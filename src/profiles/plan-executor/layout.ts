import { CheckpointError } from '../../contract/errors.js';
import { assertRunId, SNAPSHOT_ID_PATTERN } from '../../contract/ids.js';
import { assertKey } from '../../storage/keys.js';
import { GZIP_SUFFIX, type KeyInfo, type ProfileLayout } from '../../contract/layout.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link planExecutorLayout}. */
export interface PlanExecutorLayoutOptions {
  /**
   * The spec's `{state_path}`: a key prefix before `plans/` (`'.planning'` →
   * `.planning/plans/02-CHECKPOINT.json`), or `''` for the storage root.
   * @default ''
   */
  readonly statePath?: string;
  /**
   * Keep every checkpoint in `plans/{NN}-CHECKPOINT.history/<snapshot_id>.json` (with an
   * `index.json` there) besides the spec's single file. The spec keeps only the one file,
   * which the writer then replaces in place.
   * @default false
   */
  readonly history?: boolean;
}

const SUFFIX = '-CHECKPOINT';

/**
 * The plan-executor.md layout: `{state_path}/plans/{NN}-CHECKPOINT.json`, plus — only
 * when `history` is on — `{NN}-CHECKPOINT.history/` beside it. Savepoint's own files
 * sit beside the checkpoint under the same `{NN}-CHECKPOINT` stem (`.lock`, `.parts/`),
 * so nothing else in `plans/` is ever touched.
 */
export function planExecutorLayout(options: PlanExecutorLayoutOptions = {}): ProfileLayout {
  assertOptionsArgument(options, 'planExecutorLayout');
  const raw = options.statePath ?? '';
  const trimmed = raw.replace(/\/+$/, '');
  if (trimmed !== '') assertKey(trimmed);
  const plans = trimmed === '' ? 'plans/' : `${trimmed}/plans/`;
  const history = options.history ?? false;
  const stem = (planNumber: string): string => {
    assertRunId(planNumber);
    return `${plans}${planNumber}${SUFFIX}`;
  };

  const layout: ProfileLayout = {
    runsPrefix: plans,
    latestKey: (n) => `${stem(n)}.json`,
    lockKey: (n) => `${stem(n)}.lock`,
    partKey: (ref, part) => `${stem(ref.runId)}.parts/${ref.sequence}/${part}`,
    ...(history ? { historyKeyFrom: 'id' as const } : {}),
    classify(key): KeyInfo | undefined {
      if (!key.startsWith(plans)) return undefined;
      const rest = key.slice(plans.length);
      const m = /^([^/]+)-CHECKPOINT(\.json|\.lock|\.history\/[^/]+|\.parts\/\d+\/[^/]+)$/.exec(rest);
      if (!m) return undefined;
      const runId = m[1]!;
      try {
        assertRunId(runId);
      } catch {
        return undefined;
      }
      const tail = m[2]!;
      if (tail === '.json') return { kind: 'latest', runId, compressed: false };
      if (tail === '.lock') return { kind: 'lock', runId, compressed: false };
      if (tail.startsWith('.parts/')) return { kind: 'part', runId, sequence: Number(tail.split('/')[1]), compressed: false };
      if (!history) return undefined;
      let file = tail.slice('.history/'.length);
      if (file === 'index.json') return { kind: 'index', runId, compressed: false };
      const compressed = file.endsWith(GZIP_SUFFIX);
      if (compressed) file = file.slice(0, -GZIP_SUFFIX.length);
      if (!file.endsWith('.json')) return undefined;
      const snapshotId = file.slice(0, -'.json'.length);
      return SNAPSHOT_ID_PATTERN.test(snapshotId) ? { kind: 'history', runId, snapshotId, compressed } : undefined;
    },
  };
  if (history) {
    layout.historyKey = (ref) => {
      // Callers may probe with placeholder ids (to learn the folder); only real ones classify back.
      if (ref.id.includes('/')) throw new CheckpointError('checkpoint_key_invalid', 'history file names must be a single path segment');
      const key = `${stem(ref.runId)}.history/${ref.id}.json`;
      assertKey(key);
      return key;
    };
    layout.indexKey = (n) => `${stem(n)}.history/index.json`;
  }
  return layout;
}
