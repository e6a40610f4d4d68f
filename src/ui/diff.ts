/** One difference between two JSON values, at a path such as `payload.steps[2].name`. */
export interface ValueChange {
  readonly path: string;
  readonly kind: 'added' | 'removed' | 'changed';
  readonly before?: unknown;
  readonly after?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const member = (path: string, key: string): string => (IDENTIFIER.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`);

/**
 * Every path where `b` differs from `a`: members and elements added or removed, leaves
 * changed (a change of type is one `changed` at that path). Arrays are compared by
 * position. Stops after `limit` changes, so a wholly different pair costs a bounded answer.
 */
export function diffValues(a: unknown, b: unknown, limit = 5000): ValueChange[] {
  const out: ValueChange[] = [];
  const walk = (x: unknown, y: unknown, path: string): void => {
    if (out.length >= limit) return;
    if (isObject(x) && isObject(y)) {
      const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
      for (const k of keys) {
        const p = member(path, k);
        if (!Object.hasOwn(y, k)) out.push({ path: p, kind: 'removed', before: x[k] });
        else if (!Object.hasOwn(x, k)) out.push({ path: p, kind: 'added', after: y[k] });
        else walk(x[k], y[k], p);
        if (out.length >= limit) return;
      }
      return;
    }
    if (Array.isArray(x) && Array.isArray(y)) {
      for (let i = 0; i < Math.max(x.length, y.length); i++) {
        const p = `${path}[${i}]`;
        if (i >= y.length) out.push({ path: p, kind: 'removed', before: x[i] });
        else if (i >= x.length) out.push({ path: p, kind: 'added', after: y[i] });
        else walk(x[i], y[i], p);
        if (out.length >= limit) return;
      }
      return;
    }
    if (!Object.is(x, y) && JSON.stringify(x) !== JSON.stringify(y)) out.push({ path: path || '(root)', kind: 'changed', before: x, after: y });
  };
  walk(a, b, '');
  return out;
}
