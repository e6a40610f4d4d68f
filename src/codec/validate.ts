import Ajv2020Module from 'ajv/dist/2020.js';
import { precompiledValidators } from './generated/validators.js';
import { schemaKey } from './schema-key.js';
import { assertObjectArgument } from '../contract/arguments.js';
import { documentValidator, type AjvValidator, type DocumentValidator } from './document-validator.js';
import { type JsonSchema } from '../contract/json.js';

export { assertValid, type DocumentValidator, type SchemaIssue } from './document-validator.js';
export { type JsonSchema } from '../contract/json.js';

// ajv ships CJS with `exports.default`; under NodeNext the default import is the module object.
const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;

let ajv: InstanceType<typeof Ajv2020> | undefined;
const compiled = new WeakMap<object, AjvValidator>();

/**
 * A validator for `schema` (draft 2020-12, all errors, formats checked through the
 * `pattern`s zod emits rather than ajv-formats, which keeps the runtime dependencies
 * to the chosen ones). Every schema savepoint itself stores documents under was
 * compiled by ajv at build time (scripts/generate-validators.ts) and is found by its
 * content, so validation needs no `new Function` and runs under a Content-Security-Policy
 * without 'unsafe-eval'. Any other schema (a custom profile's) is compiled with ajv at
 * run time, which does need eval. Validators are cached per schema object.
 *
 * savepoint's own modules import their document's validator directly
 * (src/codec/generated/<schema>.js) and never load this one, nor ajv: it is for custom
 * profiles and tools (`savepoint/toolkit`).
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
  return documentValidator(fn);
}
