import Ajv2020Module from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { CheckpointError } from './errors.js';
import { precompiledValidators, type PrecompiledValidator } from './generated/validators.js';
import { schemaKey } from './schema-key.js';
import { assertArrayArgument, assertObjectArgument } from './arguments.js';

/** A JSON Schema (draft 2020-12) object. */
export type JsonSchema = { readonly [key: string]: unknown };

/** One schema violation: the JSON Pointer of the value and what is wrong with it. */
export interface SchemaIssue {
  path: string;
  message: string;
}

/** A compiled check of a stored document against its JSON Schema. */
export type DocumentValidator = (document: unknown) => readonly SchemaIssue[];

// ajv ships CJS with `exports.default`; under NodeNext the default import is the module object.
const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;

let ajv: InstanceType<typeof Ajv2020> | undefined;
const compiled = new WeakMap<object, ValidateFunction | PrecompiledValidator>();

function issuesOf(errors: readonly ErrorObject[] | null | undefined): SchemaIssue[] {
  return (errors ?? []).map((e) => ({
    path: e.instancePath === '' ? '/' : e.instancePath,
    message: e.keyword === 'additionalProperties' ? `unexpected property "${String((e.params as { additionalProperty?: string }).additionalProperty)}"` : (e.message ?? e.keyword),
  }));
}

/**
 * A validator for `schema` (draft 2020-12, all errors, formats checked through the
 * `pattern`s zod emits rather than ajv-formats, which keeps the runtime dependencies
 * to the four chosen ones). Every schema savepoint itself stores documents under was
 * compiled by ajv at build time (scripts/generate-validators.ts) and is found by its
 * content, so validation needs no `new Function` and runs under a Content-Security-Policy
 * without 'unsafe-eval'. Any other schema (a custom profile's) is compiled with ajv at
 * run time, which does need eval. Validators are cached per schema object.
 */
export function compileValidator(schema: JsonSchema): DocumentValidator {
  assertObjectArgument(schema, 'compileValidator', 'schema');
  let fn = compiled.get(schema);
  if (!fn) {
    fn = precompiledValidators[schemaKey(schema)];
    if (!fn) {
      ajv ??= new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
      fn = ajv.compile(schema);
    }
    compiled.set(schema, fn);
  }
  const validate = fn;
  return (document) => (validate(document) ? [] : issuesOf(validate.errors));
}

/** Throws `checkpoint_schema_invalid` listing the first issues, or returns when there are none. */
export function assertValid(issues: readonly SchemaIssue[], where: string): void {
  assertArrayArgument(issues, 'assertValid', 'issues');
  if (issues.length === 0) return;
  const shown = issues.slice(0, 5).map((i) => `${i.path} ${i.message}`);
  const more = issues.length > 5 ? ` (+${issues.length - 5} more)` : '';
  throw new CheckpointError('checkpoint_schema_invalid', `${where} does not match its schema: ${shown.join('; ')}${more}`, {
    details: { paths: issues.slice(0, 20).map((i) => i.path) },
  });
}
