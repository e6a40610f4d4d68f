import { z } from 'zod';

/*
 * The zod schemas of a batch file's envelope, for tools (`savepoint/toolkit`) and the
 * build-time catalog of validators (scripts/validator-catalog.ts). batch-file.ts reads and
 * writes the document with the JSON Schema and validator generated from them
 * (src/codec/generated/), so the core entry does not load zod.
 */

/**
 * phased-workflow-github.md `batching_strategy`: when the rate-limit budget is low,
 * several checkpoints go into one `batch_{first}_{last}.json` holding their documents
 * and a `batch_metadata` block. Every member keeps its own integrity block, so a
 * member is validated exactly like a stand-alone history entry.
 */
export const BatchFileSchema = z
  .object({
    checkpoints: z.array(z.record(z.string(), z.unknown())).min(1),
    batch_metadata: z
      .object({
        first_sequence: z.number().int().min(1),
        last_sequence: z.number().int().min(1),
        checkpoint_count: z.number().int().min(1),
      })
      .strict(),
  })
  .strict();
