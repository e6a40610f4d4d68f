import AjvModule, { type ValidateFunction } from 'ajv';
import pinned from './openapi-schemas.json' with { type: 'json' };

/** Operation ids (GitHub's OpenAPI `operationId`s) of the endpoints the emulator implements. */
export type GitHubOperationId =
  | 'repos/get-content'
  | 'repos/create-or-update-file-contents'
  | 'repos/delete-file'
  | 'repos/get-commit'
  | 'repos/compare-commits-with-basehead'
  | 'git/create-blob'
  | 'git/get-blob'
  | 'git/create-tree'
  | 'git/get-tree'
  | 'git/create-commit'
  | 'git/get-ref'
  | 'git/update-ref';

/** One disagreement between a body and GitHub's published schema. */
export interface SchemaViolation {
  readonly operation: GitHubOperationId;
  readonly direction: 'request' | 'response';
  readonly status?: number;
  readonly mediaType?: string;
  /** ajv's messages, `instancePath message`. */
  readonly errors: readonly string[];
}

interface PinnedOperation {
  readonly method: string;
  readonly path: string;
  readonly request?: object;
  readonly responses: Readonly<Record<string, Readonly<Record<string, object>> | null>>;
}

interface PinnedFile {
  readonly source: { readonly package: string; readonly version: string; readonly apiVersion: string };
  readonly operations: Readonly<Record<string, PinnedOperation>>;
  readonly definitions: Readonly<Record<string, object>>;
}

const file = pinned as unknown as PinnedFile;

/** Where the pinned schemas come from (`@octokit/openapi` version), as recorded by `scripts/extract-github-schemas.ts`. */
export const GITHUB_SCHEMA_SOURCE: { readonly package: string; readonly version: string; readonly apiVersion: string } = file.source;

// ajv ships CJS with `exports.default`; under NodeNext the default import is the module object.
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as typeof AjvModule.default;
let ajv: InstanceType<typeof Ajv> | undefined;
const cache = new Map<string, ValidateFunction>();

function compile(key: string, schema: object): ValidateFunction {
  let fn = cache.get(key);
  if (!fn) {
    ajv ??= new Ajv({ strict: true, allErrors: true, validateFormats: false });
    fn = ajv.compile({ ...schema, definitions: file.definitions });
    cache.set(key, fn);
  }
  return fn;
}

function run(fn: ValidateFunction, body: unknown): string[] {
  return fn(body) ? [] : (fn.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`);
}

/** Validates a request body against the operation's published request schema; `[]` when valid or when the operation takes no body. */
export function validateRequestBody(operation: GitHubOperationId, body: unknown): string[] {
  const schema = file.operations[operation]?.request;
  return schema ? run(compile(`${operation} request`, schema), body) : [];
}

/**
 * Validates a JSON response body against the schema GitHub publishes for this operation,
 * status and media type. Statuses an operation does not declare (rate limits, 5xx) are
 * checked against `basic-error`, which is what GitHub sends for them.
 */
export function validateResponseBody(operation: GitHubOperationId, status: number, mediaType: string, body: unknown): string[] {
  const responses = file.operations[operation]?.responses ?? {};
  const declared = responses[String(status)];
  let schema: object | undefined;
  if (declared) {
    schema = declared[mediaType] ?? declared['application/json'] ?? Object.values(declared)[0];
  } else if (status >= 400) {
    schema = file.definitions['basic-error'];
  }
  if (!schema) return status === 204 || status === 304 ? [] : [`no schema for status ${status}`];
  return run(compile(`${operation} ${status} ${mediaType}`, schema), body);
}

/** The operations and statuses the pinned file covers (for tests that check coverage). */
export function pinnedOperations(): Readonly<
  Record<string, { readonly method: string; readonly path: string; readonly statuses: readonly string[] }>
> {
  return Object.fromEntries(
    Object.entries(file.operations).map(([id, op]) => [id, { method: op.method, path: op.path, statuses: Object.keys(op.responses) }]),
  );
}
