import type { GitHubRequest } from './http.js';
import type { HttpState } from './http-state.js';

/** A raw answer: status, headers and the whole body. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly bytes: Uint8Array;
}

/** Sends one request through `fetch` with GitHub's headers, counted, under the request timeout. */
export async function sendOnce(h: HttpState, req: GitHubRequest): Promise<RawAnswer> {
  const { options, tracker, byOperation } = h;
  const token = typeof options.token === 'function' ? await options.token() : options.token;
  options.scrubber.remember(token);
  const query = Object.entries(req.query ?? {}).filter((e): e is [string, string] => e[1] !== undefined);
  const url = `${h.base}${req.path}${query.length > 0 ? `?${new URLSearchParams(query).toString()}` : ''}`;
  const headers: Record<string, string> = {
    accept: req.accept ?? 'application/vnd.github+json',
    authorization: `Bearer ${token}`,
    'x-github-api-version': '2022-11-28',
    'user-agent': options.userAgent,
  };
  if (req.body !== undefined) headers['content-type'] = 'application/json';
  const controller = new AbortController();
  // A watchdog on real network I/O, not a wait: it runs on the platform timer, not the Clock.
  const timer = globalThis.setTimeout(() => controller.abort(), options.requestTimeoutMs) as unknown as { unref?: () => void };
  timer.unref?.();
  tracker.countCall();
  byOperation[req.operation] = (byOperation[req.operation] ?? 0) + 1;
  if (req.method !== 'GET') {
    h.contentRequests++;
    tracker.noteContentRequest(options.clock.now());
  }
  try {
    const res = await options.fetch(url, {
      method: req.method,
      headers,
      ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
      signal: controller.signal,
    });
    // Read the body under the same watchdog: a slow body is as lost as a slow status line.
    return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
  } finally {
    globalThis.clearTimeout(timer as Parameters<typeof globalThis.clearTimeout>[0]);
  }
}
