import type { ErrorObject } from 'ajv';
import { CheckpointError } from '../contract/errors.js';
import type { PrecompiledValidator } from './generated/validators.js';
import { assertArrayArgument } from '../contract/arguments.js';

/** One schema violation: the JSON Pointer of the value and what is wrong with it. */
export interface SchemaIssue {
  path: string;
  message: string;
}

/** A compiled check of a stored document against its JSON Schema. */
export type DocumentValidator = (document: unknown) => readonly SchemaIssue[];

/** A validator compiled by ajv (at build or run time): `true`, or `false` with `errors` set. */
export type AjvValidator = PrecompiledValidator;

/** The issues of ajv's errors, one per error, paths as JSON Pointers (`/` for the root). */
export function issuesOf(errors: readonly ErrorObject[] | null | undefined): SchemaIssue[] {
  return (errors ?? []).map((e) => ({
    path: e.instancePath === '' ? '/' : e.instancePath,
    message:
      e.keyword === 'additionalProperties'
        ? `unexpected property "${String((e.params as { additionalProperty?: string }).additionalProperty)}"`
        : (e.message ?? e.keyword),
  }));
}

/** The {@link DocumentValidator} of an ajv validator. */
export function documentValidator(validate: AjvValidator): DocumentValidator {
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
