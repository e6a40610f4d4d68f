import { z } from 'zod';

/*
 * The zod schemas of `preserved_runs.json`, for tools (`savepoint/toolkit`) and the
 * build-time catalog of validators (scripts/validator-catalog.ts). preserved-runs.ts reads and
 * writes the document with the JSON Schema and validator generated from them
 * (src/codec/generated/), so the core entry does not load zod.
 */

/** One preserved run, as savepoint writes it. Extra members a person added are kept. */
export const PreservedRunEntrySchema = z.looseObject({
  run_id: z.string().min(1),
  /** Why the run is kept ("interesting failure", a lesson…). */
  reason: z.string().optional(),
  /** When it was added (RFC 3339). */
  preserved_at: z.string().optional(),
});

const ListSchema = z.array(z.union([z.string().min(1), PreservedRunEntrySchema]));

/**
 * Every form savepoint accepts in `preserved_runs.json`:
 * - a plain array of run ids: `["run-a", "run-b"]`;
 * - an array of entries: `[{ "run_id": "run-a", "reason": "…" }]`;
 * - an object listing them under `preserved_runs`, `runs` or `run_ids` (ids or entries, mixed).
 */
export const PreservedRunsInputSchema = z.union([
  ListSchema,
  z.looseObject({ preserved_runs: ListSchema }),
  z.looseObject({ runs: ListSchema }),
  z.looseObject({ run_ids: ListSchema }),
]);

/** The canonical form savepoint writes: `{ "preserved_runs": [{ "run_id": …, "reason"?: …, "preserved_at"?: … }] }`, sorted by run id. */
export const PreservedRunsSchema = z.looseObject({ preserved_runs: z.array(PreservedRunEntrySchema) });
