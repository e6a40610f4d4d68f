/**
 * resolveRetentionPolicy checks a policy with the validator generated at build time from
 * RetentionPolicySchema (the core entry does not load zod). The two must accept
 * exactly the same policies, and a refusal must name the member that is wrong.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RetentionPolicySchema, resolveRetentionPolicy } from 'savepoint/toolkit';
import { isCheckpointError, type RetentionPolicy } from 'savepoint';

const duration = fc.oneof(fc.nat(), fc.double(), fc.constantFrom('14d', '1h30m', '2 weeks', '', 'soon', '5m', '-1d'));
const rule = fc.oneof(
  fc.record(
    { rule: fc.constant('keep-last'), count: fc.oneof(fc.nat(60), fc.integer({ min: -2, max: -1 }), fc.constant(1.5)), maxAge: duration },
    { requiredKeys: ['rule'] },
  ),
  fc.record({ rule: fc.constant('keep-within'), duration }, { requiredKeys: ['rule'] }),
  fc.record({ rule: fc.constant('keep-latest-status'), status: fc.constantFrom('failed', '', 3) }, { requiredKeys: ['rule'] }),
  fc.record(
    {
      rule: fc.constant('keep-calendar'),
      unit: fc.constantFrom('hour', 'day', 'week', 'month', 'year', 'decade'),
      count: fc.nat(10),
      timeZone: fc.constantFrom('UTC', ''),
      maxAge: duration,
    },
    { requiredKeys: ['rule'] },
  ),
  fc.record(
    { rule: fc.constant('preserve-runs'), runIds: fc.array(fc.constantFrom('run-a', '', 7), { maxLength: 3 }) },
    { requiredKeys: ['rule'] },
  ),
  fc.record(
    { rule: fc.constant('run-tiers'), keepAll: fc.nat(5), keepFinal: fc.oneof(fc.nat(5), fc.constant(-1)) },
    { requiredKeys: ['rule'] },
  ),
  fc.record({ rule: fc.constantFrom('keep-forever', 3), count: fc.nat() }),
);
const policy = fc.record(
  {
    name: fc.oneof(fc.constantFrom('p', ''), fc.string({ minLength: 99, maxLength: 101 })),
    rules: fc.oneof(
      fc.array(
        fc.oneof(
          rule,
          rule.map((r) => ({ ...r, extra: 1 })),
        ),
        { maxLength: 4 },
      ),
      fc.constant('keep-last'),
    ),
    compressAfter: duration,
    extra: fc.constant(true),
  },
  { requiredKeys: [] },
);

describe('retention policy validation without zod', () => {
  it('accepts exactly what RetentionPolicySchema accepts, and names a member of the policy when it refuses (property)', () => {
    fc.assert(
      fc.property(policy, (p) => {
        const zodAccepts = RetentionPolicySchema.safeParse(p).success;
        let refusal: unknown;
        try {
          resolveRetentionPolicy(p as RetentionPolicy);
        } catch (err) {
          refusal = err;
        }
        // The schema stage's refusals name a path; later ones (a duration's value, two run-tiers) do not reach it.
        const schemaRefusal = isCheckpointError(refusal, 'checkpoint_config_invalid') && /policy is invalid at "/.test(refusal.message);
        expect(schemaRefusal).toBe(!zodAccepts);
        if (schemaRefusal) {
          const path = /at "([^"]*)"/.exec((refusal as Error).message)![1]!;
          expect(path === '' || /^(name|rules|compressAfter|extra)(\.|$)/.test(path)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('run tiers never let an older tier keep more than a newer one', () => {
  it("refuses finalKeeps 'latest' with archiveKeeps 'final' (explicit or by default), naming the member; accepts it with 'summary'", () => {
    for (const tiers of [
      { rule: 'run-tiers', keepAll: 1, keepFinal: 1, finalKeeps: 'latest', archiveKeeps: 'final' },
      { rule: 'run-tiers', keepAll: 1, keepFinal: 1, finalKeeps: 'latest' },
    ] as const) {
      let refusal: unknown;
      try {
        resolveRetentionPolicy({ name: 'tiers', rules: [tiers] });
      } catch (err) {
        refusal = err;
      }
      expect(isCheckpointError(refusal) && refusal.reasonCode === 'checkpoint_config_invalid').toBe(true);
      expect((refusal as Error).message).toContain('rules.0.archiveKeeps');
    }
    expect(
      resolveRetentionPolicy({
        name: 'tiers',
        rules: [{ rule: 'run-tiers', keepAll: 1, keepFinal: 1, finalKeeps: 'latest', archiveKeeps: 'summary' }],
      }).rules[0],
    ).toMatchObject({ finalKeeps: 'latest', archiveKeeps: 'summary' });
  });
});
