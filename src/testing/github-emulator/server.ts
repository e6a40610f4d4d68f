import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../../model/clock.js';
import { createFaultSchedule, type EmulatorFault, type EmulatorFaults } from './faults.js';
import { errorReply, route, type HandlerContext, type Reply } from './handlers.js';
import { createRepoState, type EmulatorState } from './repo-state.js';
import { validateRequestBody, validateResponseBody, type GitHubOperationId, type SchemaViolation } from './schemas.js';
import { assertOptionsArgument } from '../../model/arguments.js';

/** Options of {@link startGitHubEmulator}. */
export interface GitHubEmulatorOptions {
  /** Repository owner in URLs. @default 'savepoint' */
  readonly owner?: string;
  /** Repository name in URLs. @default 'checkpoints' */
  readonly repo?: string;
  /**
   * The token requests must carry (`Authorization: Bearer …` or `token …`); others get
   * 401 "Bad credentials". `undefined` accepts any request.
   * @default undefined
   */
  readonly token?: string;
  /** @default 'main' */
  readonly defaultBranch?: string;
  /**
   * Start without any commit ("Git Repository is empty."), as a repository created
   * without a README is.
   * @default false (one initial commit holding README.md)
   */
  readonly empty?: boolean;
  /** Clock for rate-limit windows and commit dates; share the adapter's fake clock in tests. @default systemClock */
  readonly clock?: Clock;
  /** Primary rate limit (`x-ratelimit-*` headers). */
  readonly rateLimit?: {
    /** Requests per window. @default 5000 */
    readonly limit?: number;
    /** Requests left in the first window. @default limit */
    readonly remaining?: number;
    /** Window length. @default 3_600_000 (one hour) */
    readonly windowMs?: number;
  };
  /**
   * Secondary limit on content-generating requests (POST, PATCH, PUT, DELETE), as GitHub
   * documents it: "no more than 80 content-generating requests per minute and no more
   * than 500 content-generating requests per hour". `false` turns it off.
   * @default { perMinute: 80, perHour: 500 }
   */
  readonly secondaryLimit?: { readonly perMinute?: number; readonly perHour?: number } | false;
  /** Most entries a contents-API directory listing returns (GitHub: 1,000). @default 1000 */
  readonly contentsDirectoryLimit?: number;
  /** Most entries a tree listing returns before `truncated: true` (GitHub: 100,000). @default 100000 */
  readonly treeEntryLimit?: number;
  /** Files per page of a commit's diff (GitHub: 300). @default 300 */
  readonly commitFilesPerPage?: number;
  /** Validate every request and response body against GitHub's published schemas. @default true */
  readonly validate?: boolean;
  /** Keep parsed request and response bodies in {@link GitHubEmulator.requestLog}. @default true */
  readonly logBodies?: boolean;
  /** TCP port on 127.0.0.1. @default 0 (any free port) */
  readonly port?: number;
}

/** One request as the emulator saw it. */
export interface EmulatorRequestRecord {
  readonly seq: number;
  readonly method: string;
  /** URL path and query. */
  readonly path: string;
  readonly operation: GitHubOperationId | 'unknown';
  readonly status: number;
  /** POST, PATCH, PUT or DELETE: counts toward GitHub's content-creation limit. */
  readonly contentCreating: boolean;
  /** Faults injected into this request. */
  readonly faults: readonly EmulatorFault['kind'][];
  /** Clock time when it arrived. */
  readonly atMs: number;
  readonly requestBody?: unknown;
  readonly responseBody?: unknown;
  /** Media type of the response body (for schema checks). */
  readonly mediaType?: string;
}

/** The emulator's primary rate-limit window. */
export interface EmulatorRateLimit {
  readonly limit: number;
  readonly remaining: number;
  /** When the window resets, epoch ms. */
  readonly resetAtMs: number;
  readonly used: number;
  /** Sets the budget (e.g. `{ remaining: 50 }` to make an adapter batch). */
  set(values: { readonly limit?: number; readonly remaining?: number; readonly resetAtMs?: number }): void;
}

/** A running emulator. */
export interface GitHubEmulator {
  /** Base URL of the emulated REST API (`http://127.0.0.1:<port>`): pass it as `githubStorage({ baseUrl })`. */
  readonly url: string;
  readonly owner: string;
  readonly repo: string;
  /** The token it expects, if any. */
  readonly token: string | undefined;
  /** The repository: read stored files, write as another process would. */
  readonly state: EmulatorState;
  /** Fault injection. */
  readonly faults: EmulatorFaults;
  /** Every request handled, in order. */
  readonly requestLog: readonly EmulatorRequestRecord[];
  /** Bodies that did not match GitHub's published schemas (an emulator or client bug); empty when all is well. */
  readonly schemaViolations: readonly SchemaViolation[];
  readonly rateLimit: EmulatorRateLimit;
  /** Clears {@link requestLog} (e.g. between bench phases). */
  resetLog(): void;
  /** Stops the server. */
  close(): Promise<void>;
}

const PRIMARY_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts a local stand-in for the parts of GitHub's REST API that `githubStorage`
 * uses, on 127.0.0.1. It keeps a real git object model (ids computed as git computes
 * them), answers with GitHub's status codes and messages, sends `x-ratelimit-*`
 * headers from a budget you control, enforces the secondary content-creation limits,
 * validates every body against GitHub's OpenAPI schemas, and injects faults on demand.
 *
 * Slow-response faults wait in real time (they exercise real request timeouts);
 * rate-limit windows follow the `clock` you pass.
 *
 * @example
 * ```ts
 * const gh = await startGitHubEmulator({ token: 'test-token' });
 * const storage = githubStorage({ owner: gh.owner, repo: gh.repo, token: 'test-token', baseUrl: gh.url });
 * gh.faults.add({ operation: 'git/update-ref', fault: { kind: 'move-head' } });
 * ```
 */
export async function startGitHubEmulator(options: GitHubEmulatorOptions = {}): Promise<GitHubEmulator> {
  assertOptionsArgument(options, 'startGitHubEmulator');
  const clock = options.clock ?? systemClock;
  const owner = options.owner ?? 'savepoint';
  const repo = options.repo ?? 'checkpoints';
  const validate = options.validate ?? true;
  const logBodies = options.logBodies ?? true;
  const state = createRepoState({
    defaultBranch: options.defaultBranch ?? 'main',
    now: () => clock.now(),
    userName: 'savepoint-emulator',
    userEmail: 'emulator@savepoint.invalid',
    ...(options.empty ? {} : { initialFiles: { 'README.md': `# ${repo}\n` } }),
  });
  const faults = createFaultSchedule();
  const requestLog: EmulatorRequestRecord[] = [];
  const schemaViolations: SchemaViolation[] = [];
  const windowMs = options.rateLimit?.windowMs ?? 3_600_000;
  const budget = {
    limit: options.rateLimit?.limit ?? 5000,
    remaining: options.rateLimit?.remaining ?? options.rateLimit?.limit ?? 5000,
    resetAtMs: clock.now() + windowMs,
    used: 0,
  };
  const secondary = options.secondaryLimit === false ? undefined : { perMinute: options.secondaryLimit?.perMinute ?? 80, perHour: options.secondaryLimit?.perHour ?? 500 };
  const created: number[] = [];
  let seq = 0;
  let base = '';

  const roll = (): void => {
    const now = clock.now();
    if (now >= budget.resetAtMs) {
      budget.remaining = budget.limit;
      budget.used = 0;
      budget.resetAtMs = now + windowMs;
    }
  };
  const rateHeaders = (): Record<string, string> => ({
    'x-ratelimit-limit': String(budget.limit),
    'x-ratelimit-remaining': String(budget.remaining),
    'x-ratelimit-reset': String(Math.ceil(budget.resetAtMs / 1000)),
    'x-ratelimit-used': String(budget.used),
    'x-ratelimit-resource': 'core',
  });
  const requestId = (): string => `EMU:${seq.toString(16).toUpperCase().padStart(6, '0')}`;
  const primaryReply = (status: number): Reply =>
    errorReply(status, `API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID ${requestId()} and timestamp ${new Date(clock.now()).toISOString()}.`, PRIMARY_DOCS);
  const secondaryReply = (status: number, retryAfterSec: number | undefined): Reply => {
    const reply = errorReply(
      status,
      `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${requestId()}.`,
      'https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
    );
    return retryAfterSec === undefined ? reply : { ...reply, headers: { 'retry-after': String(retryAfterSec) } };
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const n = ++seq;
    const atMs = clock.now();
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = (req.method ?? 'GET').toUpperCase();
    const prefix = `/repos/${owner}/${repo}`;
    const matched = url.pathname.startsWith(`${prefix}/`) ? route(method, url.pathname.slice(prefix.length)) : undefined;
    const operation: GitHubOperationId | 'unknown' = matched?.route.operation ?? 'unknown';
    const contentCreating = matched?.route.contentCreating ?? method !== 'GET';
    const fired: EmulatorFault['kind'][] = [];
    let requestBody: unknown;
    let reply: Reply | undefined;
    let drop = false;
    let lateMs = 0;

    const send = (r: Reply): void => {
      const headers: Record<string, string> = { ...rateHeaders(), 'x-github-request-id': requestId(), ...(r.headers ?? {}) };
      if (r.raw) {
        headers['content-type'] = r.mediaType;
        res.writeHead(r.status, headers).end(Buffer.from(r.raw));
      } else {
        headers['content-type'] = 'application/json; charset=utf-8';
        res.writeHead(r.status, headers).end(r.json === undefined ? '' : JSON.stringify(r.json));
      }
    };
    const finish = (r: Reply | undefined): void => {
      if (r && validate && operation !== 'unknown' && r.json !== undefined && !r.raw) {
        const errors = validateResponseBody(operation, r.status, r.mediaType, r.json);
        if (errors.length > 0) schemaViolations.push({ operation, direction: 'response', status: r.status, mediaType: r.mediaType, errors });
      }
      requestLog.push({
        seq: n,
        method,
        path: `${url.pathname}${url.search}`,
        operation,
        status: r?.status ?? 0,
        contentCreating,
        faults: fired,
        atMs,
        ...(logBodies && requestBody !== undefined ? { requestBody } : {}),
        ...(logBodies && r?.json !== undefined ? { responseBody: r.json } : {}),
        ...(r ? { mediaType: r.mediaType } : {}),
      });
    };

    // Authentication comes first, as on GitHub; failed logins do not spend the budget.
    if (options.token !== undefined) {
      const auth = req.headers.authorization ?? '';
      if (auth !== `Bearer ${options.token}` && auth !== `token ${options.token}`) {
        reply = errorReply(401, 'Bad credentials');
        send(reply);
        finish(reply);
        return;
      }
    }
    if (!matched) {
      reply = errorReply(404, 'Not Found');
      send(reply);
      finish(reply);
      return;
    }
    if (raw.length > 0) {
      try {
        requestBody = JSON.parse(raw.toString('utf8'));
      } catch {
        reply = errorReply(400, 'Problems parsing JSON');
        send(reply);
        finish(reply);
        return;
      }
    }
    roll();
    const ctx: HandlerContext = {
      state,
      owner,
      repo,
      base,
      accept: req.headers.accept ?? 'application/json',
      query: url.searchParams,
      body: requestBody,
      staleBack: undefined,
      corrupt: false,
      contentsDirectoryLimit: options.contentsDirectoryLimit ?? 1000,
      treeEntryLimit: options.treeEntryLimit ?? 100_000,
      commitFilesPerPage: options.commitFilesPerPage ?? 300,
    };
    const mutable = ctx as { staleBack: number | undefined; corrupt: boolean };
    let post: EmulatorFault | undefined;
    for (const fault of faults.take({ operation, method, path: `${url.pathname}${url.search}` }, n)) {
      fired.push(fault.kind);
      switch (fault.kind) {
        case 'move-head': {
          const branch = matched.route.branch(ctx);
          state.commitFiles({ [fault.path ?? `foreign/${n}.txt`]: `written by another process before request ${n}\n` }, { branch, message: `foreign write before request ${n}` });
          break;
        }
        case 'stale-read':
          mutable.staleBack = fault.commitsBack ?? 1;
          break;
        case 'corrupt-write':
          mutable.corrupt = true;
          break;
        case 'primary-rate-limit':
          budget.remaining = 0;
          reply ??= primaryReply(fault.status ?? 403);
          break;
        case 'secondary-rate-limit':
          reply ??= secondaryReply(fault.status ?? 403, fault.retryAfterSec);
          break;
        case 'status':
          if (fault.landed) post = fault;
          else reply ??= errorReply(fault.status, fault.message ?? (fault.status >= 500 ? 'Server Error' : 'Injected failure'));
          break;
        case 'network-error':
          if (fault.landed) post = fault;
          else drop = true;
          break;
        case 'delay':
          if (fault.landed ?? true) lateMs = Math.max(lateMs, fault.ms);
          else await delay(fault.ms);
          break;
      }
    }
    if (drop) {
      finish(undefined);
      res.socket?.destroy();
      return;
    }
    if (!reply && budget.remaining <= 0) reply = primaryReply(403);
    if (!reply && secondary && contentCreating) {
      const now = clock.now();
      while (created.length > 0 && created[0]! <= now - 3_600_000) created.shift();
      const lastMinute = created.filter((t) => t > now - 60_000).length;
      if (lastMinute >= secondary.perMinute || created.length >= secondary.perHour) {
        const oldest = lastMinute >= secondary.perMinute ? created[created.length - lastMinute]! + 60_000 : created[0]! + 3_600_000;
        reply = secondaryReply(403, Math.max(1, Math.ceil((oldest - now) / 1000)));
      }
    }
    if (!reply) {
      budget.remaining--;
      budget.used++;
      if (validate && requestBody !== undefined) {
        const errors = validateRequestBody(matched.route.operation, requestBody);
        if (errors.length > 0) {
          schemaViolations.push({ operation: matched.route.operation, direction: 'request', errors });
          reply = errorReply(422, `Invalid request.\n\n${errors.join('\n')}`);
        }
      }
      if (!reply) {
        if (contentCreating) created.push(clock.now());
        reply = matched.route.handle(ctx);
      }
    }
    if (post?.kind === 'network-error') {
      finish(reply);
      res.socket?.destroy();
      return;
    }
    if (post?.kind === 'status') reply = errorReply(post.status, post.message ?? 'Server Error');
    if (lateMs > 0) await delay(lateMs);
    if (res.destroyed || req.socket.destroyed) {
      finish(reply);
      return;
    }
    send(reply);
    finish(reply);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `emulator error: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    owner,
    repo,
    token: options.token,
    state,
    faults,
    requestLog,
    schemaViolations,
    rateLimit: {
      get limit() {
        roll();
        return budget.limit;
      },
      get remaining() {
        roll();
        return budget.remaining;
      },
      get resetAtMs() {
        roll();
        return budget.resetAtMs;
      },
      get used() {
        return budget.used;
      },
      set(values) {
        if (values.limit !== undefined) budget.limit = values.limit;
        if (values.remaining !== undefined) budget.remaining = values.remaining;
        if (values.resetAtMs !== undefined) budget.resetAtMs = values.resetAtMs;
      },
    },
    resetLog() {
      requestLog.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
