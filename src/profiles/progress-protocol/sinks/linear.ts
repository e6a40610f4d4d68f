import { CheckpointError } from '../../../contract/errors.js';
import { trackerError, trackerRequest, type TrackerHttpOptions } from './http.js';
import type { StatusSink } from './status-sink.js';
import { assertOptionsArgument } from '../../../contract/arguments.js';

/** The `commentCreate` mutation savepoint sends (Linear GraphQL API). */
export const LINEAR_COMMENT_CREATE =
  'mutation CommentCreate($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id } } }';
/** The `commentUpdate` mutation savepoint sends (Linear GraphQL API). */
export const LINEAR_COMMENT_UPDATE =
  'mutation CommentUpdate($id: String!, $input: CommentUpdateInput!) { commentUpdate(id: $id, input: $input) { success comment { id } } }';

/** Options of {@link linearStatusSink}. */
export interface LinearStatusSinkOptions extends TrackerHttpOptions {
  /** The issue the status comment belongs to, as `CommentCreateInput.issueId` takes it (the issue's id; Linear also resolves identifiers such as `CIA-123`). */
  readonly issueId: string;
  /** A personal API key (`lin_api_…`) or an OAuth access token; never appears in messages. */
  readonly apiKey: string;
  /**
   * How the key is sent: personal API keys go as `Authorization: <key>`, OAuth tokens as `Authorization: Bearer <token>`.
   * @default 'apiKey'
   */
  readonly tokenType?: 'apiKey' | 'oauth';
  /** GraphQL endpoint. @default 'https://api.linear.app/graphql' */
  readonly endpoint?: string;
}

interface GraphQlError {
  readonly message?: unknown;
  readonly extensions?: { readonly code?: unknown; readonly type?: unknown };
}

const NOT_FOUND = /not found|could not find/i;

function errorCode(errors: readonly GraphQlError[]): string {
  const first = errors[0]?.extensions;
  const code = typeof first?.code === 'string' ? first.code : typeof first?.type === 'string' ? first.type : 'unknown';
  // Only a short, identifier-like code reaches messages.
  return /^[A-Za-z _-]{1,40}$/.test(code) ? code : 'unknown';
}

/**
 * A {@link StatusSink} on Linear: one comment on the issue, created with `commentCreate`
 * and updated in place with `commentUpdate` (GraphQL over `POST /graphql`). An update
 * answered with an "entity not found" error resolves `false`, so the protocol creates a
 * new comment; other GraphQL errors, HTTP errors and timeouts reject with
 * `checkpoint_tracker_unavailable` (`checkpoint_rate_limited` for HTTP 429).
 *
 * @example
 * ```ts
 * const sink = linearStatusSink({ issueId: 'CIA-123', apiKey: process.env.LINEAR_API_KEY! });
 * await runCheckpointProtocol({ cwd, progress, sink });
 * ```
 */
export function linearStatusSink(options: LinearStatusSinkOptions): StatusSink {
  assertOptionsArgument(options, 'linearStatusSink');
  if (!options.issueId || !options.apiKey)
    throw new CheckpointError('checkpoint_config_invalid', 'linearStatusSink needs issueId and apiKey');
  const endpoint = options.endpoint ?? 'https://api.linear.app/graphql';
  const authorization = options.tokenType === 'oauth' ? `Bearer ${options.apiKey}` : options.apiKey;

  const call = async (
    query: string,
    variables: Record<string, unknown>,
    field: 'commentCreate' | 'commentUpdate',
  ): Promise<{ id?: string; notFound: boolean }> => {
    const res = await trackerRequest(
      'Linear',
      endpoint,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization },
        body: JSON.stringify({ query, variables }),
      },
      options,
    );
    const body = (res.json ?? {}) as {
      data?: Record<string, { success?: unknown; comment?: { id?: unknown } } | null>;
      errors?: GraphQlError[];
    };
    if (Array.isArray(body.errors) && body.errors.length > 0) {
      if (field === 'commentUpdate' && body.errors.some((e) => typeof e.message === 'string' && NOT_FOUND.test(e.message)))
        return { notFound: true };
      throw trackerError(
        'Linear',
        res.status >= 400 ? `HTTP ${res.status}, ${errorCode(body.errors)}` : `GraphQL error ${errorCode(body.errors)}`,
      );
    }
    if (res.status >= 400) throw trackerError('Linear', `HTTP ${res.status}`);
    const payload = body.data?.[field];
    const id = payload?.comment?.id;
    if (payload?.success !== true || typeof id !== 'string' || id === '') throw trackerError('Linear', `${field} did not succeed`);
    return { id, notFound: false };
  };

  return {
    name: 'Linear',
    async createComment(body) {
      const { id } = await call(LINEAR_COMMENT_CREATE, { input: { issueId: options.issueId, body } }, 'commentCreate');
      return id!;
    },
    async updateComment(id, body) {
      const result = await call(LINEAR_COMMENT_UPDATE, { id, input: { body } }, 'commentUpdate');
      return !result.notFound;
    },
  };
}
