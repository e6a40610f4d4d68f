/*
 * The snapshot model's constants, apart from its zod schemas (snapshot.ts), so the core
 * entry uses them without loading zod. snapshot.ts re-exports them.
 */

/** Priorities phased-workflow-github.md gives its triggers. */
export const PRIORITIES = ['critical', 'high', 'medium', 'low'] as const;
/** A trigger priority. */
export type Priority = (typeof PRIORITIES)[number];

/** The format version savepoint writes into `integrity.format_version`. */
export const FORMAT_VERSION = '1.0';
