/** Calls the viewer's JSON API (relative to the page, so the URL's token is carried). */
export interface ApiError {
  readonly reasonCode: string;
  readonly message: string;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly error: ApiError,
  ) {
    super(`${error.reasonCode}: ${error.message}`);
  }
}

async function parse<T>(res: Response): Promise<T> {
  const body = (await res.json()) as T | { error: ApiError };
  if (!res.ok)
    throw new ApiFailure(res.status, (body as { error: ApiError }).error ?? { reasonCode: 'ui_http_error', message: String(res.status) });
  return body as T;
}

export async function get<T>(path: string): Promise<T> {
  return parse<T>(await fetch(`api/${path}`, { headers: { accept: 'application/json' } }));
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  return parse<T>(
    await fetch(`api/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  );
}

export const enc = encodeURIComponent;
