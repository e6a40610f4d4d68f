import { CheckpointError } from '../contract/errors.js';
import type { Snapshot } from '../contract/snapshot.js';

/** One difference between two snapshots, at an RFC 6901 JSON Pointer (`/payload/steps/2`). */
export type SnapshotChange =
  | { readonly kind: 'added'; readonly path: string; readonly to: unknown }
  | { readonly kind: 'removed'; readonly path: string; readonly from: unknown }
  | { readonly kind: 'changed'; readonly path: string; readonly from: unknown; readonly to: unknown };

/** Options of {@link diffSnapshots}. */
export interface DiffSnapshotsOptions {
  /** Compare the whole envelope (id, sequence, status, createdAt, …), not only `payload`. @default false */
  readonly all?: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const escape = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

function walk(from: unknown, to: unknown, path: string, out: SnapshotChange[]): void {
  // `===` too: -0 and 0 are one JSON value (stored as 0), never a change; Object.is for NaN.
  if (from === to || Object.is(from, to)) return;
  if (Array.isArray(from) && Array.isArray(to)) {
    const n = Math.max(from.length, to.length);
    for (let i = 0; i < n; i++) {
      const p = `${path}/${i}`;
      if (i >= from.length) out.push({ kind: 'added', path: p, to: to[i] });
      else if (i >= to.length) out.push({ kind: 'removed', path: p, from: from[i] });
      else walk(from[i], to[i], p, out);
    }
    return;
  }
  if (isObject(from) && isObject(to)) {
    for (const k of [...new Set([...Object.keys(from), ...Object.keys(to)])].sort()) {
      const p = `${path}/${escape(k)}`;
      if (!Object.hasOwn(to, k) || to[k] === undefined) {
        if (Object.hasOwn(from, k) && from[k] !== undefined) out.push({ kind: 'removed', path: p, from: from[k] });
      } else if (!Object.hasOwn(from, k) || from[k] === undefined) out.push({ kind: 'added', path: p, to: to[k] });
      else walk(from[k], to[k], p, out);
    }
    return;
  }
  out.push({ kind: 'changed', path, from, to });
}

/**
 * The JSON paths added, removed or changed from snapshot `a` to snapshot `b`: of the
 * payload (paths under `/payload`), or of the whole envelope with `all`. Arrays compare
 * by position; keys in sorted order, so the result is deterministic. Values compare as
 * stored JSON does: `-0` equals `0`. Used by
 * `savepoint diff RUN A B` and meant for viewers.
 *
 * @example
 * ```ts
 * const changes = diffSnapshots(older, newer);
 * // [{ kind: 'changed', path: '/payload/step', from: 1, to: 2 }]
 * ```
 */
export function diffSnapshots(a: Snapshot<unknown>, b: Snapshot<unknown>, options: DiffSnapshotsOptions = {}): SnapshotChange[] {
  for (const [name, s] of [
    ['a', a],
    ['b', b],
  ] as const) {
    if (!isObject(s)) throw new CheckpointError('checkpoint_config_invalid', `diffSnapshots: ${name} must be a snapshot`);
  }
  const out: SnapshotChange[] = [];
  if (options.all === true) walk(a, b, '', out);
  else walk(a.payload, b.payload, '/payload', out);
  return out;
}
