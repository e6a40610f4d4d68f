import { z } from 'zod';
import type { JsonValue } from '../contract/json.js';
import { SNAPSHOT_ID_PATTERN } from '../contract/ids.js';
import { IntegritySchema, PRIORITIES, Rfc3339Schema, TriggerRecordSchema } from '../contract/snapshot.js';
import { LIFECYCLE_STATUSES } from './default-profile.js';

/*
 * The zod schemas of the default profile's document, for tools (`savepoint/toolkit`), other
 * profiles and the build-time catalog of validators (scripts/validator-catalog.ts). The
 * default profile itself (default-profile.ts) uses the JSON Schema and validator generated
 * from them (src/codec/generated/), so the core entry does not load zod.
 */

/** Any JSON value: the generic profile stores the agent's state as given. */
export const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(JsonValueSchema), z.record(z.string(), JsonValueSchema)]),
);

/**
 * The default profile's payload: any value canonical JSON can carry. Nothing is checked
 * here because encoding checks it, with the same reason code and the path of the bad value
 * (`checkpoint_schema_invalid` at `$.a[3]`), and a stored document is parsed from JSON
 * text, so its `state` is JSON by construction. (`JsonValueSchema` would check the same
 * thing a second time, recursively, on every checkpoint.)
 */
export const JsonStateSchema: z.ZodType<JsonValue> = z.custom<JsonValue>(() => true);

/**
 * The default profile's stored document: snapshot-lifecycle.md's common top-level
 * fields (`snapshot_id`, `created_at`, `run_id`, `source`, `source_details`, `status`,
 * `integrity`) with the agent's state under `state`. `sequence` and `priority` are
 * savepoint's additions (the spec has no field for them; readers ignore unknown fields).
 */
export const DefaultDocumentSchema = z
  .object({
    snapshot_id: z.string().regex(SNAPSHOT_ID_PATTERN),
    run_id: z.string().min(1),
    sequence: z.number().int().min(1),
    created_at: Rfc3339Schema,
    source: z.string().min(1),
    source_details: z.array(TriggerRecordSchema),
    priority: z.enum(PRIORITIES).optional(),
    status: z.enum(LIFECYCLE_STATUSES),
    state: JsonStateSchema,
    integrity: IntegritySchema,
  })
  .strict();
