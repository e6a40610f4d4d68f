import { z } from 'zod';
import { RETENTION_DURATION_PATTERN } from './duration.js';
import { CALENDAR_UNITS } from '../contract/retention-policy.js';
import { MAX_RETENTION_RULES } from './policy.js';

/*
 * The zod schemas of a retention policy's JSON form, for tools (`savepoint/toolkit`) and
 * the build-time catalog of validators (scripts/validator-catalog.ts). policy.ts checks a
 * policy with the JSON Schema and validator generated from them (src/codec/generated/),
 * so the core entry does not load zod.
 */

const count = z.number().int().min(0);
const duration = z.union([z.number().min(0), z.string().regex(new RegExp(RETENTION_DURATION_PATTERN))]);
const name = z.string().min(1).max(100).optional();

/** zod schema of a rule (the JSON form of {@link RetentionRule}). */
export const RetentionRuleSchema = z.discriminatedUnion('rule', [
  z.object({ rule: z.literal('keep-last'), count, maxAge: duration.optional(), name }).strict(),
  z.object({ rule: z.literal('keep-within'), duration, name }).strict(),
  z.object({ rule: z.literal('keep-latest-status'), status: z.string().min(1), name }).strict(),
  z
    .object({
      rule: z.literal('keep-calendar'),
      unit: z.enum(CALENDAR_UNITS),
      count,
      timeZone: z.string().min(1).optional(),
      maxAge: duration.optional(),
      name,
    })
    .strict(),
  z.object({ rule: z.literal('preserve-runs'), runIds: z.array(z.string().min(1)), name }).strict(),
  z
    .object({
      rule: z.literal('run-tiers'),
      keepAll: count,
      keepFinal: count,
      finalKeeps: z.enum(['latest', 'checkpoint']).optional(),
      archiveKeeps: z.enum(['summary', 'final']).optional(),
      name,
    })
    .strict(),
]);

/** zod schema of a policy's JSON form (everything but `summarizer`), e.g. for a config file. */
export const RetentionPolicySchema = z
  .object({
    name,
    rules: z.array(RetentionRuleSchema).max(MAX_RETENTION_RULES),
    compressAfter: duration.optional(),
  })
  .strict();
