import { documentValidator, type DocumentValidator } from './document-validator.js';
import { type JsonSchema } from '../contract/json.js';
import { validatorLoaders } from './generated/loaders.js';
import { schemaKey } from './schema-key.js';

/**
 * The validator of `schema`, loaded when first needed: the module generated for it at build
 * time when there is one (that module alone, not every built-in profile's validators), else
 * ajv compiling it at run time (`compileValidator`). What `jsonDocumentFormat` validates
 * with, so a program that uses one profile loads that profile's validator only.
 */
export async function loadValidator(schema: JsonSchema): Promise<DocumentValidator> {
  const load = Object.hasOwn(validatorLoaders, schemaKey(schema)) ? validatorLoaders[schemaKey(schema)] : undefined;
  if (load) return documentValidator((await load()).validate);
  return (await import('./validate.js')).compileValidator(schema);
}
