import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import AjvModule from 'ajv';
import { manualClock as publicManualClock, type ManualClock } from 'savepoint/testing';

// ---------------------------------------------------------------- temp git repositories

/** Runs git in `cwd` (tests only) with a config that ignores the machine's global settings. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' } });
}

/** A fresh repository with one commit of `files`, in a temp folder. */
export function tempRepo(files: Record<string, string> = { 'README.md': '# demo\n' }): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-progress-'));
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.name', 'Savepoint Test');
  git(dir, 'config', 'user.email', 'test@example.invalid');
  git(dir, 'config', 'commit.gpgsign', 'false');
  for (const [path, content] of Object.entries(files)) write(dir, path, content);
  git(dir, 'add', '--', ...Object.keys(files));
  git(dir, 'commit', '-q', '-m', 'initial');
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function write(dir: string, path: string, content: string): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), content);
}

export function read(dir: string, path: string): string {
  return readFileSync(join(dir, path), 'utf8');
}

/** Installs an executable pre-commit hook. */
export function installPreCommitHook(dir: string, script: string): void {
  const hook = join(dir, '.git', 'hooks', 'pre-commit');
  writeFileSync(hook, `#!/bin/sh\n${script}\n`);
  chmodSync(hook, 0o755);
}

/** `git status --porcelain` as `{ path: XY }`. */
export function statusOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of git(dir, 'status', '--porcelain=v1', '--untracked-files=all').split('\n'))
    if (line.length > 3) out[line.slice(3)] = line.slice(0, 2);
  return out;
}

// ---------------------------------------------------------------- a manual clock

/** savepoint/testing's manualClock, starting at these tests' reference moment. */
export const manualClock = (start = Date.UTC(2025, 11, 14, 15, 30, 0)): ManualClock => publicManualClock(start);

// ---------------------------------------------------------------- fake trackers on 127.0.0.1

/** A failure to inject into the next request(s). */
export type Fault = { readonly status: number } | 'hang';

export interface FakeTracker {
  readonly url: string;
  /** Every request received: method, path, headers, parsed JSON body. */
  readonly requests: { method: string; path: string; headers: IncomingMessage['headers']; body: unknown }[];
  /** Comments by id. */
  readonly comments: Map<string, { body: string; issue: string }>;
  /** Queue a fault for the next request. */
  fail(fault: Fault): void;
  /** Resolves when a request arrives (for timeout tests). */
  nextRequest(): Promise<void>;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

async function startFake(
  handle: (req: IncomingMessage, text: string, res: ServerResponse, state: FakeTracker) => void,
): Promise<FakeTracker> {
  const faults: Fault[] = [];
  const waiters: (() => void)[] = [];
  const tracker = { requests: [], comments: new Map() } as unknown as FakeTracker & { url: string };
  const server: Server = createServer((req, res) => {
    void bodyOf(req).then((text) => {
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      tracker.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      waiters.splice(0).forEach((w) => w());
      const fault = faults.shift();
      if (fault === 'hang') return; // never answer
      if (fault) return send(res, fault.status, { message: 'Service Unavailable' }, fault.status === 429 ? { 'retry-after': '60' } : {});
      handle(req, text, res, tracker);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  Object.assign(tracker, {
    url: `http://127.0.0.1:${port}`,
    fail: (f: Fault) => void faults.push(f),
    nextRequest: () => new Promise<void>((resolve) => waiters.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return tracker;
}

/** The API key the fake Linear server accepts. */
export const LINEAR_KEY = 'lin_api_TESTSECRET0123456789';

/**
 * A Linear GraphQL endpoint (`POST /graphql`) that speaks `commentCreate` and
 * `commentUpdate` as Linear does: `{ data: { commentCreate: { success, comment { id } } } }`,
 * and an `errors` array (with `extensions.type`/`code`) for a bad key, an unknown
 * operation, or an update of a comment that does not exist ("Entity not found").
 */
export function startFakeLinear(): Promise<FakeTracker> {
  return startFake((req, _text, res, state) => {
    const body = state.requests.at(-1)!.body as { query?: unknown; variables?: Record<string, unknown> } | undefined;
    if (req.method !== 'POST' || req.url !== '/graphql') return send(res, 404, { errors: [{ message: 'Not found' }] });
    if (req.headers.authorization !== LINEAR_KEY) {
      return send(res, 400, {
        errors: [
          {
            message: 'Authentication required, not authenticated',
            extensions: { type: 'authentication error', code: 'AUTHENTICATION_ERROR', userError: true },
          },
        ],
      });
    }
    if (!String(req.headers['content-type']).startsWith('application/json') || typeof body?.query !== 'string') {
      return send(res, 400, { errors: [{ message: 'Must provide query string.', extensions: { code: 'BAD_REQUEST' } }] });
    }
    const query = body.query.replace(/\s+/g, ' ');
    const vars = body.variables ?? {};
    if (/mutation \w*\(\$input: CommentCreateInput!\) \{ commentCreate\(input: \$input\) \{ success comment \{ id \} \} \}/.test(query)) {
      const input = vars.input as { issueId?: unknown; body?: unknown } | undefined;
      if (typeof input?.issueId !== 'string' || typeof input.body !== 'string') {
        return send(res, 400, {
          errors: [{ message: 'Argument Validation Error', extensions: { type: 'invalid input', code: 'INVALID_INPUT' } }],
        });
      }
      const id = randomUUID();
      state.comments.set(id, { body: input.body, issue: input.issueId });
      return send(res, 200, { data: { commentCreate: { success: true, comment: { id } } } });
    }
    if (
      /mutation \w*\(\$id: String!, \$input: CommentUpdateInput!\) \{ commentUpdate\(id: \$id, input: \$input\) \{ success comment \{ id \} \} \}/.test(
        query,
      )
    ) {
      const id = vars.id;
      const input = vars.input as { body?: unknown } | undefined;
      if (typeof id !== 'string' || typeof input?.body !== 'string')
        return send(res, 400, { errors: [{ message: 'Argument Validation Error', extensions: { type: 'invalid input' } }] });
      const existing = state.comments.get(id);
      if (!existing) {
        return send(res, 200, {
          data: null,
          errors: [
            {
              message: 'Entity not found: Comment',
              path: ['commentUpdate'],
              extensions: {
                type: 'invalid input',
                code: 'INPUT_ERROR',
                userError: true,
                userPresentableMessage: 'Could not find referenced Comment.',
              },
            },
          ],
        });
      }
      existing.body = input.body;
      return send(res, 200, { data: { commentUpdate: { success: true, comment: { id } } } });
    }
    return send(res, 400, { errors: [{ message: 'Cannot query field', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] });
  });
}

/** The token the fake GitHub server accepts. */
export const GITHUB_TOKEN = 'ghp_TESTSECRET0123456789abcdef';

const require = createRequire(import.meta.url);
type OpenApi = {
  paths: Record<
    string,
    Record<
      string,
      {
        requestBody?: { content: Record<string, { schema: object }> };
        responses: Record<string, { content?: Record<string, { schema: object }> }>;
      }
    >
  >;
  components: { schemas: Record<string, object> };
};
let openapi: OpenApi | undefined;
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as typeof AjvModule.default;
let ajv: InstanceType<typeof Ajv> | undefined;

/**
 * Validates `value` against GitHub's published OpenAPI description (`@octokit/openapi`)
 * for the request body or a response of an operation, so the fake server and the sink
 * provably speak GitHub's shapes. Returns ajv's messages (empty when valid).
 */
export function githubSchemaErrors(path: string, method: 'post' | 'patch', part: 'request' | number, value: unknown): string[] {
  openapi ??= require('@octokit/openapi/generated/api.github.com.json') as OpenApi;
  if (!ajv) {
    ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: 'gh', components: openapi.components });
  }
  const op = openapi.paths[path]![method]!;
  const schema =
    part === 'request'
      ? op.requestBody!.content['application/json']!.schema
      : op.responses[String(part)]!.content!['application/json']!.schema;
  const rewritten = JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"gh#/components/')) as object;
  const validate = ajv.compile(rewritten);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/**
 * GitHub's issue-comment REST endpoints: `POST /repos/{owner}/{repo}/issues/{n}/comments`
 * (201 with an `issue-comment`), `PATCH /repos/{owner}/{repo}/issues/comments/{id}` (200,
 * or 404 `{ message: 'Not Found' }`), 401 for a bad token. Response bodies follow GitHub's
 * OpenAPI schema (checked in the tests with {@link githubSchemaErrors}).
 */
export function startFakeGitHub(owner = 'acme', repo = 'app'): Promise<FakeTracker> {
  let nextId = 2_100_000_001;
  return startFake((req, _text, res, state) => {
    const url = req.url ?? '';
    const base = `http://${req.headers.host}`;
    if (req.headers.authorization !== `Bearer ${GITHUB_TOKEN}`)
      return send(res, 401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' });
    if (!req.headers['user-agent'])
      return send(res, 403, {
        message: 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header',
      });
    const body = state.requests.at(-1)!.body as { body?: unknown } | undefined;
    const comment = (id: number, text: string, issue: string) => ({
      id,
      node_id: `IC_kwDO${id}`,
      url: `${base}/repos/${owner}/${repo}/issues/comments/${id}`,
      html_url: `https://github.com/${owner}/${repo}/issues/${issue}#issuecomment-${id}`,
      body: text,
      user: {
        login: 'savepoint-bot',
        id: 1,
        node_id: 'U_1',
        avatar_url: 'https://avatars.example/1',
        gravatar_id: '',
        url: `${base}/users/savepoint-bot`,
        html_url: 'https://github.com/savepoint-bot',
        followers_url: '',
        following_url: '',
        gists_url: '',
        starred_url: '',
        subscriptions_url: '',
        organizations_url: '',
        repos_url: '',
        events_url: '',
        received_events_url: '',
        type: 'Bot',
        site_admin: false,
      },
      created_at: '2025-12-14T15:30:00Z',
      updated_at: '2025-12-14T15:30:00Z',
      issue_url: `${base}/repos/${owner}/${repo}/issues/${issue}`,
      author_association: 'NONE',
    });
    const create = new RegExp(`^/repos/${owner}/${repo}/issues/(\\d+)/comments$`).exec(url);
    if (req.method === 'POST' && create) {
      if (typeof body?.body !== 'string')
        return send(res, 422, {
          message: 'Invalid request.',
          errors: [{ resource: 'IssueComment', code: 'missing_field', field: 'body' }],
        });
      const id = nextId++;
      state.comments.set(String(id), { body: body.body, issue: create[1]! });
      return send(res, 201, comment(id, body.body, create[1]!), { location: `${base}/repos/${owner}/${repo}/issues/comments/${id}` });
    }
    const update = new RegExp(`^/repos/${owner}/${repo}/issues/comments/(\\d+)$`).exec(url);
    if (req.method === 'PATCH' && update) {
      const existing = state.comments.get(update[1]!);
      if (!existing)
        return send(res, 404, {
          message: 'Not Found',
          documentation_url: 'https://docs.github.com/rest/issues/comments#update-an-issue-comment',
          status: '404',
        });
      if (typeof body?.body !== 'string') return send(res, 422, { message: 'Invalid request.' });
      existing.body = body.body;
      return send(res, 200, comment(Number(update[1]), body.body, existing.issue));
    }
    return send(res, 404, { message: 'Not Found', status: '404' });
  });
}
