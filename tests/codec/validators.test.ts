import fc from 'fast-check';
import Ajv2020Module from 'ajv/dist/2020.js';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as core from 'savepoint';
import * as toolkit from 'savepoint/toolkit';
import * as lifecycle from 'savepoint/snapshot-lifecycle';
import * as phased from 'savepoint/phased-workflow';
import * as planExec from 'savepoint/plan-executor';
import * as handoff from 'savepoint/handoff-markdown';
import * as progress from 'savepoint/progress-protocol';
import { precompiledValidators } from '../../src/codec/generated/validators.js';
import { validatorLoaders } from '../../src/codec/generated/loaders.js';
import { schemaKey } from '../../src/codec/schema-key.js';
import { generate } from '../../scripts/generate-validators.js';
import { VALIDATOR_CATALOG } from '../../scripts/validator-catalog.js';

const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;

const exportedSchemas = (mod: Record<string, unknown>): [string, object][] =>
  Object.entries(mod).filter(([name, v]) => name.endsWith('JsonSchema') && typeof v === 'object' && v !== null) as [string, object][];

describe('validators compiled at build time', () => {
  it('src/codec/generated/ holds what scripts/generate-validators.ts produces now, one module per schema', () => {
    const files = generate();
    for (const [name, code] of files) {
      const current = readFileSync(new URL(`../../src/codec/generated/${name}`, import.meta.url), 'utf8');
      expect(current === code, `${name} is stale: run npx tsx scripts/generate-validators.ts`).toBe(true);
    }
    expect(files.size).toBe(2 * VALIDATOR_CATALOG.length + 2);
  });

  it('covers every exported JSON Schema and every built-in profile document', () => {
    const schemas: [string, object][] = [
      ...exportedSchemas(core as Record<string, unknown>),
      ...exportedSchemas(toolkit as Record<string, unknown>),
      ...exportedSchemas(lifecycle as Record<string, unknown>),
      ...exportedSchemas(phased as Record<string, unknown>),
      ...exportedSchemas(planExec as Record<string, unknown>),
      ...exportedSchemas(handoff as Record<string, unknown>),
      ...exportedSchemas(progress as Record<string, unknown>),
      ['defaultProfile', core.defaultProfile.document.jsonSchema],
      ['snapshotLifecycle', lifecycle.snapshotLifecycle.document.jsonSchema],
      ['phasedWorkflow', phased.phasedWorkflow.document.jsonSchema],
      ['planExecutor', planExec.planExecutor.document.jsonSchema],
    ];
    const missing = schemas.filter(([, s]) => !precompiledValidators[schemaKey(s)]).map(([name]) => name);
    expect(missing).toEqual([]);
    // jsonDocumentFormat loads a built-in schema's own module through loaders.js (never all of them).
    expect(Object.keys(validatorLoaders).sort()).toEqual(Object.keys(precompiledValidators).sort());
    expect(VALIDATOR_CATALOG.length).toBeGreaterThanOrEqual(15);
  });

  it('agrees with ajv compiling the same schema at run time, on documents and on noise (property)', async () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
    const { bytes } = await core.defaultProfile.document.encode({
      id: toolkit.newSnapshotId(0),
      runId: 'r',
      sequence: 1,
      createdAt: '1970-01-01T00:00:00.000Z',
      source: 'manual',
      sourceDetails: [],
      status: 'in_progress',
      payload: { a: [1, 'x'] },
    });
    const realDoc = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    const samples = fc.oneof(
      fc.jsonValue(),
      fc
        .record({ key: fc.constantFrom(...Object.keys(realDoc)), value: fc.jsonValue() })
        .map(({ key, value }) => ({ ...realDoc, [key]: value })),
      fc.constant(realDoc),
    );
    for (const [name, schema] of VALIDATOR_CATALOG) {
      const runtime = ajv.compile(schema as object);
      const built = precompiledValidators[schemaKey(schema)]!;
      fc.assert(
        fc.property(samples, (doc) => {
          const a = runtime(doc);
          const b = built(doc);
          expect(b, name).toBe(a);
          if (!a)
            expect((built.errors ?? []).map((e) => e.instancePath + e.keyword).sort(), name).toEqual(
              (runtime.errors ?? []).map((e) => e.instancePath + e.keyword).sort(),
            );
        }),
        { numRuns: 60 },
      );
    }
    expect(precompiledValidators[schemaKey(core.defaultProfile.document.jsonSchema)]!(realDoc)).toBe(true);
  });
});
