import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../contract/clock.js';
import { assertOptionsArgument } from '../../contract/arguments.js';
import { createEmulatorState } from './emulator-state.js';
import type { EmulatorFault, EmulatorFaults } from './faults.js';
import { rateLimitView } from './rate-budget.js';
import type { EmulatorState } from './repo-state.js';
import { handleRequest } from './request-handler.js';
import type { GitHubOperationId, SchemaViolation } from './schemas.js';

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
  const emu = createEmulatorState(options);
  const server = createServer((req, res) => {
    handleRequest(emu, req, res).catch((err: unknown) => {
      if (!res.headersSent)
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `emulator error: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  emu.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: emu.base,
    owner: emu.owner,
    repo: emu.repo,
    token: options.token,
    state: emu.state,
    faults: emu.faults,
    requestLog: emu.requestLog,
    schemaViolations: emu.schemaViolations,
    rateLimit: rateLimitView(emu),
    resetLog() {
      emu.requestLog.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
