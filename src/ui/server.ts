/**
 * The local viewer's HTTP server (`savepoint ui`). It binds 127.0.0.1 only and answers
 * nothing unless the request path starts with a random token, so other local users and
 * web pages (which cannot learn the token) cannot read the store; the Host header must
 * name the loopback address (no DNS rebinding). Pages carry a strict
 * Content-Security-Policy. It is read-only unless started with `allowPrune`, and even
 * then a prune applies only the exact plan the page showed (by digest).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isCheckpointError } from '../contract/errors.js';
import type { Profile } from '../contract/profile.js';
import { UI_ASSETS } from './generated/assets.js';
import { resumeView, verifyRun } from './checks.js';
import { applyRetentionPlan, retentionView } from './retention-view.js';
import { listRunViews } from './runs-view.js';
import type { ViewerSource } from './source.js';
import { childrenOnTimeline, diffView, snapshotView } from './snapshot-view.js';
import { findSnapshot, timelineCache } from './timeline.js';

/** Options of {@link startUiServer}. */
export interface UiServerOptions<P = unknown> extends Omit<ViewerSource, 'profile'> {
  /** The profile the store was written with. */
  readonly profile: Profile<P>;
  /** TCP port on 127.0.0.1; 0 picks a free one. @default 0 */
  readonly port?: number;
  /** Allow applying a retention plan from the page. @default false */
  readonly allowPrune?: boolean;
  /** Label of the store shown on the page (never a URL with credentials). */
  readonly storeLabel?: string;
  /** The URL token; random (32 bytes) unless given (tests). */
  readonly token?: string;
}

/** A running viewer. */
export interface UiServer {
  /** `http://127.0.0.1:<port>/<token>/` — the only URL that answers. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** The page's Content-Security-Policy: own scripts and styles only, no inline code, no eval, no framing. */
export const UI_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS = {
  'content-security-policy': UI_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reasonCode: string,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const sendJson = (res: ServerResponse, status: number, value: unknown): void =>
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function readBody(req: IncomingMessage, max = 16 * 1024): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new HttpError(413, 'ui_body_too_large', 'request body too large');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new HttpError(400, 'ui_bad_request', 'request body is not JSON');
  }
}

type Route = (
  source: ViewerSource & { readonly timelines: ReturnType<typeof timelineCache> },
  params: string[],
  query: URLSearchParams,
) => Promise<unknown>;

/**
 * A timeline entry without its empty members (null, false, []) and without the key of a
 * readable file: a 10,000-snapshot run is then a few hundred KB instead of megabytes. The
 * page fills the defaults back in.
 */
function compactEntry(entry: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const readable = (entry as { error?: unknown }).error === null;
  for (const [k, v] of Object.entries(entry)) {
    if (v === null || v === false || (Array.isArray(v) && v.length === 0) || (k === 'key' && readable)) continue;
    out[k] = v;
  }
  return out;
}

const notFound = (what: string): never => {
  throw new HttpError(404, 'ui_not_found', `${what} not found`);
};

/** GET routes under `/<token>/api/`, matched on decoded path segments. */
const ROUTES: readonly (readonly [RegExp, Route])[] = [
  [/^runs$/, (s) => listRunViews(s, (files) => s.timelines.rememberListing(files))],
  [
    /^runs\/([^/]+)\/timeline$/,
    async (s, [run], q) => {
      const t = (await s.timelines.timeline(run!, q.get('quick') === '1')) ?? notFound(`run "${run}"`);
      return { runId: run, complete: t.complete, snapshots: t.snapshots.map(compactEntry) };
    },
  ],
  [
    /^runs\/([^/]+)\/snapshots\/([^/]+)$/,
    async (s, [run, ref]) => {
      const found = (await findSnapshot(s, run!, ref!, s.timelines)) ?? notFound(`snapshot "${ref}" of run "${run}"`);
      // The run's timeline is cached (findSnapshot read it): a checkpoint's children cost no read.
      const children =
        s.profile.name === 'langgraph' ? childrenOnTimeline((await s.timelines.timeline(run!, false))?.snapshots ?? [], found.id) : [];
      return snapshotView(s, run!, found, children);
    },
  ],
  [
    /^runs\/([^/]+)\/diff$/,
    async (s, [run], q) => {
      const a = q.get('a') ?? notFound('snapshot a');
      const b = q.get('b') ?? notFound('snapshot b');
      const [x, y] = [await findSnapshot(s, run!, a, s.timelines), await findSnapshot(s, run!, b, s.timelines)];
      if (!x || !y) return notFound(`snapshot "${x ? b : a}" of run "${run}"`);
      return { runId: run, a: x.sequence, b: y.sequence, ...diffView(s, x, y) };
    },
  ],
  [/^runs\/([^/]+)\/verify$/, async (s, [run]) => (await verifyRun(s, run!)) ?? notFound(`run "${run}"`)],
  [/^runs\/([^/]+)\/resume$/, (s, [run]) => resumeView(s, run!)],
  [/^retention$/, (s, _p, q) => retentionView(s, q.get('run') ?? undefined)],
];

/** What the request handler of a running viewer needs. */
interface UiServerState {
  /** The URL token every request path must start with. */
  readonly token: string;
  readonly source: ViewerSource & { readonly timelines: ReturnType<typeof timelineCache> };
  /** What `api/info` answers. */
  readonly info: { readonly profile: string; readonly store: string; readonly allowPrune: boolean; readonly heartbeatMs: number | null };
  /** The port bound (0 until the server listens). */
  port: number;
}

/** Starts the viewer on 127.0.0.1. */
export async function startUiServer<P>(options: UiServerOptions<P>): Promise<UiServer> {
  const token = options.token ?? randomBytes(32).toString('base64url');
  // The viewer only reads envelopes and hands payloads to the page as JSON: any payload type will do.
  const base: ViewerSource = { storage: options.storage, profile: options.profile as unknown as Profile<unknown>, clock: options.clock };
  const state: UiServerState = {
    token,
    source: { ...base, timelines: timelineCache(base) },
    info: {
      profile: options.profile.name,
      store: options.storeLabel ?? options.storage.name,
      allowPrune: options.allowPrune === true,
      heartbeatMs: options.profile.heartbeat ? options.profile.heartbeat.intervalMs : null,
    },
    port: 0,
  };
  const server: Server = createServer((req, res) => {
    handleRequest(state, req, res).catch((err: unknown) => sendFailure(res, err));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (state.port = (server.address() as AddressInfo).port);
  return {
    url: `http://127.0.0.1:${port}/${token}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handleRequest(state: UiServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const port = state.port;
  // Only the loopback names reach us legitimately; anything else is a rebinding attempt.
  const host = req.headers.host ?? '';
  if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) throw new HttpError(421, 'ui_bad_host', 'wrong Host header');
  const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
  const segments = url.pathname.split('/');
  // segments[0] is '' (leading slash); segments[1] must be the token.
  if (segments.length < 3 || !sameToken(segments[1] ?? '', state.token)) throw new HttpError(404, 'ui_not_found', 'not found');
  const rest = segments.slice(2).join('/');
  if (req.method === 'GET' && (rest === '' || rest === 'index.html')) return send(res, 200, 'text/html; charset=utf-8', UI_ASSETS.html);
  if (req.method === 'GET' && rest === 'app.js') return send(res, 200, 'text/javascript; charset=utf-8', UI_ASSETS.js);
  if (req.method === 'GET' && rest === 'app.css') return send(res, 200, 'text/css; charset=utf-8', UI_ASSETS.css);
  if (!rest.startsWith('api/')) throw new HttpError(404, 'ui_not_found', 'not found');
  const api = rest.slice(4);
  if (req.method === 'GET' && api === 'info') return sendJson(res, 200, state.info);
  if (req.method === 'POST' && api === 'retention/apply') return applyRetention(state, req, res);
  if (req.method !== 'GET') throw new HttpError(405, 'ui_method_not_allowed', 'method not allowed');
  return sendJson(res, 200, await routeGet(state, api, url.searchParams));
}

/** `POST api/retention/apply`: applies the plan the page showed, named by its digest, if pruning is allowed. */
async function applyRetention(state: UiServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!state.info.allowPrune)
    throw new HttpError(403, 'ui_read_only', 'this viewer is read-only: start it with --allow-prune to apply retention');
  if (req.headers['content-type'] !== 'application/json') throw new HttpError(415, 'ui_bad_request', 'expected application/json');
  const body = await readBody(req);
  const digest =
    body && typeof body === 'object' && typeof (body as { digest?: unknown }).digest === 'string'
      ? (body as { digest: string }).digest
      : undefined;
  if (!digest || (body as { confirm?: unknown }).confirm !== true)
    throw new HttpError(400, 'ui_bad_request', 'a confirmed plan digest is required');
  const result = await applyRetentionPlan(state.source, digest);
  if (!result) throw new HttpError(409, 'ui_plan_changed', 'the store changed since the plan was shown; look at the new plan first');
  return sendJson(res, 200, result);
}

/** Answers a GET under `api/` from {@link ROUTES}. */
async function routeGet(state: UiServerState, api: string, query: URLSearchParams): Promise<unknown> {
  let params: string[];
  try {
    params = api.split('/').map((p) => decodeURIComponent(p));
  } catch {
    throw new HttpError(400, 'ui_bad_request', 'bad path encoding');
  }
  const path = params.join('/');
  for (const [pattern, route] of ROUTES) {
    const m = pattern.exec(path);
    // A decoded segment holding "/" would re-split differently: refuse it rather than guess.
    if (m && m.slice(1).every((p) => !p.includes('/'))) return route(state.source, m.slice(1), query);
  }
  throw new HttpError(404, 'ui_not_found', 'not found');
}

/** The error answer: HttpErrors and CheckpointErrors are described, anything else is not. */
function sendFailure(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof HttpError) return sendJson(res, err.status, { error: { reasonCode: err.reasonCode, message: err.message } });
  if (isCheckpointError(err)) {
    const status = err.reasonCode === 'checkpoint_key_invalid' ? 400 : err.reasonCode === 'checkpoint_not_found' ? 404 : 500;
    return sendJson(res, status, { error: { reasonCode: err.reasonCode, message: err.message } });
  }
  // Unknown failures are not described to the page: their text may hold anything.
  sendJson(res, 500, { error: { reasonCode: 'ui_internal_error', message: 'internal error' } });
}
