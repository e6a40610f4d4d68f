import { freezePolicy, keepLast, keepLatestStatus } from '../../retention/policy.js';
import { type RetentionPolicy, type RetentionRule } from '../../contract/retention-policy.js';
import type { RetentionDuration } from '../../contract/retention-policy.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link createSnapshotLifecycleRetention}; every default is snapshot-lifecycle.md's. */
export interface SnapshotLifecycleRetentionOptions {
  /** Snapshots kept per run id. @default 50 */
  readonly keepLast?: number;
  /** Snapshots older than this are pruned unless a terminal-status rule (or a safety rule) keeps them. @default '14d' */
  readonly maxAge?: RetentionDuration;
  /** Statuses whose newest snapshot per run is always kept ("preserved terminal snapshots"). @default ['failed', 'completed'] */
  readonly keepLatestStatuses?: readonly string[];
  /** Gzip kept history entries older than this, or `false`. @default '24h' */
  readonly compressAfter?: RetentionDuration | false;
}

/**
 * snapshot-lifecycle.md's retention defaults as a policy: keep the latest 50 snapshots
 * per run (`keep-last`, only those younger than 14 days: "prune snapshots older than 14
 * days"), always keep the latest `failed` and latest `completed` snapshot of each run
 * (`keep-latest-failed`, `keep-latest-completed`: the "preserved terminal snapshots" the
 * 14-day prune spares), and gzip kept history entries older than 24 hours (never
 * `latest.json`). A run's latest snapshot and preserved runs are kept by the safety rules.
 */
export function createSnapshotLifecycleRetention(options: SnapshotLifecycleRetentionOptions = {}): RetentionPolicy {
  assertOptionsArgument(options, 'createSnapshotLifecycleRetention');
  const rules: RetentionRule[] = [keepLast(options.keepLast ?? 50, { maxAge: options.maxAge ?? '14d' })];
  for (const status of options.keepLatestStatuses ?? ['failed', 'completed']) rules.push(keepLatestStatus(status));
  const compressAfter = options.compressAfter === undefined ? '24h' : options.compressAfter;
  return freezePolicy({ name: 'snapshotLifecycle', rules, ...(compressAfter === false ? {} : { compressAfter }) });
}

/** snapshot-lifecycle.md's default policy (see {@link createSnapshotLifecycleRetention}). */
export const snapshotLifecycleRetention: RetentionPolicy = createSnapshotLifecycleRetention();
