import { z } from 'zod';
import { Rfc3339Schema } from '../contract/snapshot.js';

/*
 * The zod schemas of a run's `index.json`, for tools (`savepoint/toolkit`) and the
 * build-time catalog of validators (scripts/validator-catalog.ts). run-index.ts reads and
 * writes the document with the JSON Schema and validator generated from them
 * (src/codec/generated/), so the core entry does not load zod.
 */

/**
 * One entry of a run index: phased-workflow-github.md's `index_schema` item, plus
 * `status` (savepoint's addition, so retention and `findIncompleteRuns` need not open
 * every history file).
 */
export const RunIndexEntrySchema = z
  .object({
    sequence: z.number().int().min(1),
    checkpoint_id: z.string().min(1),
    trigger: z.string().min(1),
    timestamp: Rfc3339Schema,
    file_path: z.string().min(1),
    status: z.string().min(1).optional(),
  })
  .strict();

/** A run's `index.json` (phased-workflow-github.md `index_schema`), entries in ascending sequence. */
export const RunIndexSchema = z
  .object({
    run_id: z.string().min(1),
    checkpoint_count: z.number().int().min(0),
    checkpoints: z.array(RunIndexEntrySchema),
    last_updated: Rfc3339Schema,
  })
  .strict();
