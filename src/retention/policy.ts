import type { z } from 'zod';
import { CheckpointError } from '../contract/errors.js';
import type { ErrorObject } from 'ajv';
import type { JsonSchema } from '../contract/json.js';
import * as generated from '../codec/generated/retention-policy.js';
import { assertTimeZone } from './calendar.js';
import { formatRetentionDuration, parseRetentionDuration } from './duration.js';
import { type RetentionDuration } from '../contract/retention-policy.js';
import type { RetentionPolicySchema } from './policy-schema.js';
import type { RetentionSummarizer } from '../contract/retention-policy.js';
import { assertObjectArgument } from '../contract/arguments.js';
import {
  type CalendarUnit,
  type KeepLastRule,
  type KeepWithinRule,
  type KeepLatestStatusRule,
  type KeepCalendarRule,
  type PreserveRunsRule,
  type RunTiersRule,
  type RetentionRule,
  type RetentionPolicy,
} from '../contract/retention-policy.js';

/** Most rules one policy may hold (each rule is one bit of a reason mask in the planner). */
export const MAX_RETENTION_RULES = 24;

/** JSON Schema of a policy's JSON form, for config files and non-TypeScript tools. */
export const retentionPolicyJsonSchema: JsonSchema = generated.jsonSchema;

const RULE_CONST = '/properties/rule/const';

/**
 * The one problem to report of a policy the generated validator refused, as zod's first issue
 * was: a rule is one of six shapes, and ajv reports every shape's complaints, so only those of
 * the shape the rule's `rule` names are kept (or, for an unknown `rule`, that one). The path
 * is dotted (`rules.0.count`) and names a missing or unexpected member itself.
 */
function policyProblem(errors: readonly ErrorObject[]): { path: string; message: string } {
  const mismatched = errors.filter((e) => e.keyword === 'const' && e.schemaPath.endsWith(RULE_CONST));
  const otherShapes = mismatched.map((e) => e.schemaPath.slice(0, -RULE_CONST.length + 1));
  const relevant = errors.filter(
    (e) => e.keyword !== 'oneOf' && !/\/anyOf\/\d/.test(e.schemaPath) && !otherShapes.some((shape) => e.schemaPath.startsWith(shape)),
  );
  const dotted = (pointer: string, member?: unknown): string =>
    [...pointer.split('/').slice(1), ...(member === undefined ? [] : [String(member)])].join('.');
  const first = relevant[0];
  if (!first) {
    const kinds = mismatched.map((e) => JSON.stringify((e.params as { allowedValue?: unknown }).allowedValue));
    return { path: dotted(mismatched[0]?.instancePath ?? ''), message: `must be one of ${kinds.join(', ')}` };
  }
  const params = first.params as { missingProperty?: string; additionalProperty?: string };
  switch (first.keyword) {
    case 'required':
      return { path: dotted(first.instancePath, params.missingProperty), message: 'is required' };
    case 'additionalProperties':
      return { path: dotted(first.instancePath, params.additionalProperty), message: 'is not a member of this rule or policy' };
    case 'anyOf':
      return { path: dotted(first.instancePath), message: 'must be milliseconds (a number >= 0) or a duration such as "14d" or "1h30m"' };
    default:
      return { path: dotted(first.instancePath), message: first.message ?? first.keyword };
  }
}

/** A rule with its durations in milliseconds and its name resolved: what the planner works with. */
export type ResolvedRule =
  | { readonly rule: 'keep-last'; readonly name: string; readonly count: number; readonly maxAgeMs: number }
  | { readonly rule: 'keep-within'; readonly name: string; readonly durationMs: number }
  | { readonly rule: 'keep-latest-status'; readonly name: string; readonly status: string }
  | {
      readonly rule: 'keep-calendar';
      readonly name: string;
      readonly unit: CalendarUnit;
      readonly count: number;
      readonly timeZone: string;
      readonly maxAgeMs: number;
    }
  | { readonly rule: 'preserve-runs'; readonly name: string; readonly runIds: ReadonlySet<string> }
  | {
      readonly rule: 'run-tiers';
      readonly name: string;
      readonly keepAll: number;
      readonly keepFinal: number;
      readonly finalKeeps: 'latest' | 'checkpoint';
      readonly archiveKeeps: 'summary' | 'final';
    };

/** A validated policy: what {@link resolveRetentionPolicy} returns. */
export interface ResolvedRetentionPolicy {
  readonly name: string;
  readonly rules: readonly ResolvedRule[];
  /** `Infinity` when the policy does not compress. */
  readonly compressAfterMs: number;
  readonly summarizer?: RetentionSummarizer;
}

const CALENDAR_NAMES: Record<CalendarUnit, string> = {
  hour: 'keep-hourly',
  day: 'keep-daily',
  week: 'keep-weekly',
  month: 'keep-monthly',
  year: 'keep-yearly',
};

/** The default reason name of a rule (`keep-last`, `keep-latest-failed`, `keep-daily`, …). */
export function retentionRuleName(rule: RetentionRule): string {
  assertObjectArgument(rule, 'retentionRuleName', 'rule');
  if (rule.name) return rule.name;
  switch (rule.rule) {
    case 'keep-latest-status':
      return `keep-latest-${rule.status}`;
    case 'keep-calendar':
      return CALENDAR_NAMES[rule.unit];
    case 'run-tiers':
      return 'run-tier';
    default:
      return rule.rule;
  }
}

/**
 * Validates a policy and resolves its durations and names. Throws
 * `checkpoint_config_invalid` naming the first bad field.
 */
export function resolveRetentionPolicy(policy: RetentionPolicy): ResolvedRetentionPolicy {
  assertObjectArgument(policy, 'resolveRetentionPolicy', 'policy');
  const { summarizer, ...data } = policy as RetentionPolicy & Record<string, unknown>;
  if (!generated.validate(data)) {
    const { path, message } = policyProblem(generated.validate.errors ?? []);
    throw new CheckpointError('checkpoint_config_invalid', `retention policy is invalid at "${path}": ${message}`, {
      details: { path },
    });
  }
  const checked = data as z.output<typeof RetentionPolicySchema>;
  if (summarizer !== undefined && typeof summarizer !== 'function') {
    throw new CheckpointError('checkpoint_config_invalid', 'retention policy summarizer must be a function', {
      details: { path: 'summarizer' },
    });
  }
  const rules = checked.rules.map((rule, i): ResolvedRule => {
    const ruleName = retentionRuleName(rule);
    const ms = (d: RetentionDuration | undefined, field: string): number =>
      d === undefined ? Infinity : parseRetentionDuration(d, `rules.${i}.${field}`);
    switch (rule.rule) {
      case 'keep-last':
        return { rule: 'keep-last', name: ruleName, count: rule.count, maxAgeMs: ms(rule.maxAge, 'maxAge') };
      case 'keep-within':
        return { rule: 'keep-within', name: ruleName, durationMs: ms(rule.duration, 'duration') };
      case 'keep-latest-status':
        return { rule: 'keep-latest-status', name: ruleName, status: rule.status };
      case 'keep-calendar': {
        const timeZone = rule.timeZone ?? 'UTC';
        assertTimeZone(timeZone, `rules.${i}.timeZone`);
        return { rule: 'keep-calendar', name: ruleName, unit: rule.unit, count: rule.count, timeZone, maxAgeMs: ms(rule.maxAge, 'maxAge') };
      }
      case 'preserve-runs':
        return { rule: 'preserve-runs', name: ruleName, runIds: new Set(rule.runIds) };
      case 'run-tiers': {
        const finalKeeps = rule.finalKeeps ?? 'checkpoint';
        const archiveKeeps = rule.archiveKeeps ?? 'final';
        // An older tier never keeps more than a newer one: with 'latest' a second-tier run keeps
        // latest.json alone (its batch file goes), while an archived run's 'final' would keep its
        // final snapshot's batch file and batchmates — raising keepFinal would then delete what
        // a smaller count kept (found by the monotonicity property).
        if (finalKeeps === 'latest' && archiveKeeps === 'final') {
          throw new CheckpointError(
            'checkpoint_config_invalid',
            `retention policy is invalid at "rules.${i}.archiveKeeps": with finalKeeps 'latest', archived runs must keep their summary only (archiveKeeps: 'summary'), never more than the runs before them`,
            {
              details: { path: `rules.${i}.archiveKeeps` },
            },
          );
        }
        return { rule: 'run-tiers', name: ruleName, keepAll: rule.keepAll, keepFinal: rule.keepFinal, finalKeeps, archiveKeeps };
      }
    }
  });
  if (rules.filter((r) => r.rule === 'run-tiers').length > 1) {
    throw new CheckpointError('checkpoint_config_invalid', 'retention policy may hold at most one run-tiers rule', {
      details: { path: 'rules' },
    });
  }
  return {
    name: checked.name ?? 'custom',
    rules,
    compressAfterMs: checked.compressAfter === undefined ? Infinity : parseRetentionDuration(checked.compressAfter, 'compressAfter'),
    ...(summarizer ? { summarizer } : {}),
  };
}

/** Describes a rule in one short line, for dry runs (`keep-last 50 (max age 14d)`). */
export function describeRetentionRule(rule: RetentionRule): string {
  assertObjectArgument(rule, 'describeRetentionRule', 'rule');
  const age = (d: RetentionDuration | undefined): string =>
    d === undefined ? '' : ` (max age ${formatRetentionDuration(parseRetentionDuration(d))})`;
  switch (rule.rule) {
    case 'keep-last':
      return `${retentionRuleName(rule)}: newest ${rule.count} per run${age(rule.maxAge)}`;
    case 'keep-within':
      return `${retentionRuleName(rule)}: everything younger than ${formatRetentionDuration(parseRetentionDuration(rule.duration))}`;
    case 'keep-latest-status':
      return `${retentionRuleName(rule)}: newest "${rule.status}" snapshot per run`;
    case 'keep-calendar':
      return `${retentionRuleName(rule)}: newest per ${rule.unit} for ${rule.count} ${rule.unit}s (${rule.timeZone ?? 'UTC'})${age(rule.maxAge)}`;
    case 'preserve-runs':
      return `${retentionRuleName(rule)}: every snapshot of ${rule.runIds.length} run(s)`;
    case 'run-tiers':
      return `${retentionRuleName(rule)}: ${rule.keepAll} newest runs keep all, next ${rule.keepFinal} keep ${rule.finalKeeps === 'latest' ? 'their latest.json only' : 'their final snapshot'}, older runs are archived to a summary${rule.archiveKeeps === 'summary' ? ' only' : ''}`;
  }
}

/** Options of the calendar rule constructors. */
export interface CalendarRuleOptions {
  /** IANA time zone. @default 'UTC' */
  readonly timeZone?: string;
  /** Only snapshots younger than this count. @default no age limit */
  readonly maxAge?: RetentionDuration;
  /** Reason name. @default `keep-hourly` / `keep-daily` / … */
  readonly name?: string;
}

const calendar = (unit: CalendarUnit, n: number, options: CalendarRuleOptions = {}): KeepCalendarRule => ({
  rule: 'keep-calendar',
  unit,
  count: n,
  ...options,
});

/** `keep-last`: the `count` newest snapshots per run, optionally only those younger than `maxAge`. */
export const keepLast = (n: number, options: { maxAge?: RetentionDuration; name?: string } = {}): KeepLastRule => ({
  rule: 'keep-last',
  count: n,
  ...options,
});
/** `keep-within`: every snapshot younger than `duration`. */
export const keepWithin = (d: RetentionDuration, options: { name?: string } = {}): KeepWithinRule => ({
  rule: 'keep-within',
  duration: d,
  ...options,
});
/** `keep-latest-<status>`: the newest snapshot with `status` in each run. */
export const keepLatestStatus = (status: string, options: { name?: string } = {}): KeepLatestStatusRule => ({
  rule: 'keep-latest-status',
  status,
  ...options,
});
/** `keep-hourly`: newest snapshot per local hour, for `n` hours that have one. */
export const keepHourly = (n: number, options?: CalendarRuleOptions): KeepCalendarRule => calendar('hour', n, options);
/** `keep-daily`: newest snapshot per local day, for `n` days that have one. */
export const keepDaily = (n: number, options?: CalendarRuleOptions): KeepCalendarRule => calendar('day', n, options);
/** `keep-weekly`: newest snapshot per ISO week, for `n` weeks that have one. */
export const keepWeekly = (n: number, options?: CalendarRuleOptions): KeepCalendarRule => calendar('week', n, options);
/** `keep-monthly`: newest snapshot per local month, for `n` months that have one. */
export const keepMonthly = (n: number, options?: CalendarRuleOptions): KeepCalendarRule => calendar('month', n, options);
/** `keep-yearly`: newest snapshot per local year, for `n` years that have one. */
export const keepYearly = (n: number, options?: CalendarRuleOptions): KeepCalendarRule => calendar('year', n, options);
/** `preserve-runs`: every snapshot of these runs (like adding them to `preserved_runs.json`, without touching storage). */
export const preserveRuns = (runIds: readonly string[], options: { name?: string } = {}): PreserveRunsRule => ({
  rule: 'preserve-runs',
  runIds,
  ...options,
});
/** `run-tiers`: the `keepAll` newest runs keep everything, the next `keepFinal` keep their final snapshot (or `latest.json` only), older runs are archived to a summary (only). */
export const keepRunTiers = (tiers: {
  keepAll: number;
  keepFinal: number;
  finalKeeps?: 'latest' | 'checkpoint';
  archiveKeeps?: 'summary' | 'final';
  name?: string;
}): RunTiersRule => ({
  rule: 'run-tiers',
  ...tiers,
});

/** Freezes a policy and its rules, so the shared default policies cannot be changed by a caller. */
export function freezePolicy(policy: RetentionPolicy): RetentionPolicy {
  for (const rule of policy.rules) Object.freeze(rule);
  Object.freeze(policy.rules);
  return Object.freeze(policy);
}
