/**
 * A retention policy: the rules a profile (or a caller) asks the retention planner to
 * apply. The retention module owns this type; profiles only carry a default value.
 */
export interface RetentionPolicy {
  /** Human-readable name shown in dry runs and logs. */
  readonly name?: string;
  /** The rules; the union of what they keep is kept. */
  readonly rules: readonly unknown[];
}
