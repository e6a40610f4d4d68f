import { CheckpointError } from '../../../contract/errors.js';
import { trackerError, trackerRequest, type TrackerHttpOptions } from './http.js';
import type { StatusSink } from './status-sink.js';
import { assertOptionsArgument } from '../../../contract/arguments.js';

/** Options of {@link githubIssueCommentSink}. */
export interface GitHubIssueCommentSinkOptions extends TrackerHttpOptions {
  /** Repository owner (user or organization). */
  readonly owner: string;
  /** Repository name. */
  readonly repo: string;
  /** The issue (or pull request) number the status comment belongs to. */
  readonly issueNumber: number;
  /** A token with `issues: write` (sent as `Authorization: Bearer …`; never appears in messages). */
  readonly token: string;
  /** REST API base URL (GitHub Enterprise: `https://HOST/api/v3`). @default 'https://api.github.com' */
  readonly baseUrl?: string;
  /** `User-Agent` header, which GitHub requires. @default 'savepoint' */
  readonly userAgent?: string;
}

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/**
 * A {@link StatusSink} on GitHub issue comments (REST): created with
 * `POST /repos/{owner}/{repo}/issues/{issue_number}/comments` and updated in place with
 * `PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}`. An update answered 404 or
 * 410 resolves `false` (the comment was deleted; the protocol creates a new one). 5xx,
 * other 4xx and timeouts reject with `checkpoint_tracker_unavailable`; 429, or 403 with
 * `x-ratelimit-remaining: 0`, with `checkpoint_rate_limited`.
 *
 * @example
 * ```ts
 * const sink = githubIssueCommentSink({ owner: 'acme', repo: 'app', issueNumber: 42, token: process.env.GITHUB_TOKEN! });
 * ```
 */
export function githubIssueCommentSink(options: GitHubIssueCommentSinkOptions): StatusSink {
  assertOptionsArgument(options, 'githubIssueCommentSink');
  const { owner, repo, issueNumber, token } = options;
  if (!NAME.test(owner ?? '') || !NAME.test(repo ?? '') || !Number.isSafeInteger(issueNumber) || issueNumber < 1 || !token) {
    throw new CheckpointError('checkpoint_config_invalid', 'githubIssueCommentSink needs owner, repo, a positive issueNumber and a token');
  }
  const base = (options.baseUrl ?? 'https://api.github.com').replace(/\/+$/, '');
  const headers = {
    accept: 'application/vnd.github+json',
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'user-agent': options.userAgent ?? 'savepoint',
    'x-github-api-version': '2022-11-28',
  };
  const repoPath = `${base}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;

  return {
    name: 'GitHub',
    async createComment(body) {
      const res = await trackerRequest(
        'GitHub',
        `${repoPath}/issues/${issueNumber}/comments`,
        { method: 'POST', headers, body: JSON.stringify({ body }) },
        options,
      );
      if (res.status !== 201 && res.status !== 200) throw trackerError('GitHub', `HTTP ${res.status}`);
      const id = (res.json as { id?: unknown } | undefined)?.id;
      if (!(typeof id === 'number' && Number.isSafeInteger(id)) && !(typeof id === 'string' && /^\d+$/.test(id)))
        throw trackerError('GitHub', 'response without a comment id');
      return String(id);
    },
    async updateComment(id, body) {
      // A stored id from another tracker (a Linear UUID) is simply not a GitHub comment.
      if (!/^\d+$/.test(id)) return false;
      const res = await trackerRequest(
        'GitHub',
        `${repoPath}/issues/comments/${id}`,
        { method: 'PATCH', headers, body: JSON.stringify({ body }) },
        options,
      );
      if (res.status === 404 || res.status === 410) return false;
      if (res.status !== 200) throw trackerError('GitHub', `HTTP ${res.status}`);
      return true;
    },
  };
}
