import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EmulatorServerState } from './emulator-state.js';
import type { EmulatorFault } from './faults.js';
import { route, type Reply, type Route } from './handlers.js';
import { rateHeaders, requestId } from './rate-budget.js';
import { validateResponseBody, type GitHubOperationId } from './schemas.js';

/** One request as it is handled: what arrived, which route it matched, and the faults fired into it. */
export interface Exchange {
  /** Its number, in order of arrival. */
  readonly n: number;
  readonly atMs: number;
  readonly url: URL;
  readonly method: string;
  readonly matched: { readonly route: Route; readonly param: string } | undefined;
  readonly operation: GitHubOperationId | 'unknown';
  readonly contentCreating: boolean;
  readonly fired: EmulatorFault['kind'][];
  /** The parsed JSON body, once parsed. */
  requestBody: unknown;
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Numbers an arrived request and matches it to a route. */
export function openExchange(emu: EmulatorServerState, req: IncomingMessage): Exchange {
  const n = ++emu.seq;
  const atMs = emu.clock.now();
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const method = (req.method ?? 'GET').toUpperCase();
  const prefix = `/repos/${emu.owner}/${emu.repo}`;
  const matched = url.pathname.startsWith(`${prefix}/`) ? route(method, url.pathname.slice(prefix.length)) : undefined;
  return {
    n,
    atMs,
    url,
    method,
    matched,
    operation: matched?.route.operation ?? 'unknown',
    contentCreating: matched?.route.contentCreating ?? method !== 'GET',
    fired: [],
    requestBody: undefined,
  };
}

/** Writes the reply, with the rate-limit headers and a request id. */
export function sendReply(emu: EmulatorServerState, res: ServerResponse, r: Reply): void {
  const headers: Record<string, string> = { ...rateHeaders(emu), 'x-github-request-id': requestId(emu), ...(r.headers ?? {}) };
  if (r.raw) {
    headers['content-type'] = r.mediaType;
    res.writeHead(r.status, headers).end(Buffer.from(r.raw));
  } else {
    headers['content-type'] = 'application/json; charset=utf-8';
    res.writeHead(r.status, headers).end(r.json === undefined ? '' : JSON.stringify(r.json));
  }
}

/** Checks the reply against GitHub's schemas and logs the request (`r` undefined: no answer was sent). */
export function logExchange(emu: EmulatorServerState, ex: Exchange, r: Reply | undefined): void {
  const { operation } = ex;
  if (r && emu.validate && operation !== 'unknown' && r.json !== undefined && !r.raw) {
    const errors = validateResponseBody(operation, r.status, r.mediaType, r.json);
    if (errors.length > 0)
      emu.schemaViolations.push({ operation, direction: 'response', status: r.status, mediaType: r.mediaType, errors });
  }
  emu.requestLog.push({
    seq: ex.n,
    method: ex.method,
    path: `${ex.url.pathname}${ex.url.search}`,
    operation,
    status: r?.status ?? 0,
    contentCreating: ex.contentCreating,
    faults: ex.fired,
    atMs: ex.atMs,
    ...(emu.logBodies && ex.requestBody !== undefined ? { requestBody: ex.requestBody } : {}),
    ...(emu.logBodies && r?.json !== undefined ? { responseBody: r.json } : {}),
    ...(r ? { mediaType: r.mediaType } : {}),
  });
}
