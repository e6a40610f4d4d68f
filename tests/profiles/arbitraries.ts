import fc from 'fast-check';
import Ajv2020Module from 'ajv/dist/2020.js';
import type { JsonValue } from 'savepoint';
import type { LifecycleCommandOutcome, SnapshotLifecyclePayload } from 'savepoint/snapshot-lifecycle';

// A fresh ajv, independent of savepoint's own validator: what a non-TypeScript tool would use.
const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;
export function externalValidator(schema: object): (doc: unknown) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const validate = ajv.compile(schema);
  return (doc) => (validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`));
}

export const rfc3339 = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 11, 31) }).map((ms) => new Date(ms).toISOString());

const safeKey = fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== '__proto__' && !k.startsWith('$'));

/**
 * JSON values without `__proto__` keys and without part-reference markers, normalized
 * through JSON (JSON has no -0: it reads back as 0).
 */
export const jsonValue: fc.Arbitrary<JsonValue> = fc
  .jsonValue({ maxDepth: 3 })
  .filter((v) => {
    const s = JSON.stringify(v);
    return !s.includes('__proto__') && !s.includes('"$savepoint_part');
  })
  .map((v) => JSON.parse(JSON.stringify(v)) as JsonValue);

/** Finite doubles as JSON carries them (no -0). */
export const jsonDouble = (constraints: fc.DoubleConstraints = {}) =>
  fc.double({ noNaN: true, noDefaultInfinity: true, ...constraints }).map((x) => (Object.is(x, -0) ? 0 : x));

export const jsonObject: fc.Arbitrary<Record<string, JsonValue>> = fc.dictionary(safeKey, jsonValue, { maxKeys: 4 });

export const text = fc.string({ maxLength: 30 });
export const nonEmpty = fc.string({ minLength: 1, maxLength: 20 });

export const triggerRecords = (sources: readonly string[]) =>
  fc.array(fc.record({ source: fc.constantFrom(...sources), at: rfc3339 }), { maxLength: 3 });

export const runIdArb = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$/);

const outcomeArb: fc.Arbitrary<LifecycleCommandOutcome> = fc.record(
  {
    kind: fc.constantFrom('shell', 'slash_command', 'tool_use'),
    name: nonEmpty,
    result: fc.constantFrom('PASS', 'FAIL', 'WARN'),
    duration_ms: fc.nat(),
    reason_code: nonEmpty,
    summary: text,
  },
  { requiredKeys: ['kind', 'name', 'result', 'duration_ms', 'summary'] },
);

export const lifecyclePayloadArb: fc.Arbitrary<SnapshotLifecyclePayload> = fc.record({
  step_state: fc.record({
    plan_path: nonEmpty,
    step_id: nonEmpty,
    step_ordinal: fc.nat(1000),
    step_status: fc.constantFrom('pending', 'in_progress', 'done', 'failed', 'skipped'),
    todo_compliance: fc.record({ result: nonEmpty, violations: fc.array(text, { maxLength: 3 }), checked_at: rfc3339 }),
    resume_hints: fc.record({ eligible: fc.boolean(), reason_code: nonEmpty, next_actions: fc.array(text, { maxLength: 3 }) }),
  }),
  context_digest: fc.record({
    window_pressure: fc.constantFrom('low', 'medium', 'high'),
    protected_artifacts: fc.array(nonEmpty, { maxLength: 3 }),
    dropped_items: fc.nat(),
    policy_profile: nonEmpty,
  }),
  command_outcomes: fc.array(outcomeArb, { maxLength: 20 }),
});
