import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderUiAssets } from '../../scripts/build-ui.js';
import { diffValues } from '../../src/ui/diff.js';
import { UI_ASSETS } from '../../src/ui/generated/assets.js';

describe('the viewer page', () => {
  it('is built from src/ui/client as committed (run `npm run build:ui` after editing it)', async () => {
    expect(readFileSync(new URL('../../src/ui/generated/assets.ts', import.meta.url), 'utf8')).toBe(await renderUiAssets());
  });

  it('weighs at most 50 KB gzip, and holds no inline script or style the CSP would refuse', () => {
    const gz = gzipSync(UI_ASSETS.html).length + gzipSync(UI_ASSETS.js).length + gzipSync(UI_ASSETS.css).length;
    expect(gz).toBeLessThanOrEqual(50 * 1024);
    expect(UI_ASSETS.html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(UI_ASSETS.html).not.toMatch(/\sstyle=|\son[a-z]+=/);
    // No HTML is ever built from data: text goes through textContent.
    expect(UI_ASSETS.js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });
});

describe('diffValues (the viewer diff)', () => {
  const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
  const get = (value: unknown, path: string): unknown => {
    const steps = [...path.matchAll(/\.?([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)].map((m) => m[1] ?? (m[2] !== undefined ? Number(m[2]) : (JSON.parse(m[3]!) as string)));
    return steps.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k], value);
  };

  // Key order does not make two JSON values different.
  const stable = (v: unknown): string =>
    Array.isArray(v) ? `[${v.map(stable).join(',')}]` : v !== null && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`).join(',')}}` : JSON.stringify(v);

  it('finds no change exactly when the values are equal', () => {
    fc.assert(
      fc.property(json, json, fc.boolean(), (a, b, sameTwice) => {
        const other = sameTwice ? structuredClone(a) : b;
        expect(diffValues(a, other).length === 0).toBe(stable(a) === stable(other));
      }),
    );
  });

  it('reports each change at a path that holds the values it names', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        for (const c of diffValues({ root: a }, { root: b })) {
          if (c.kind !== 'added') expect(get({ root: a }, c.path)).toEqual(c.before);
          if (c.kind !== 'removed') expect(get({ root: b }, c.path)).toEqual(c.after);
        }
      }),
    );
  });

  it('names paths the way a reader expects', () => {
    expect(diffValues({ payload: { steps: [1, 2], 'a-b': 1 } }, { payload: { steps: [1, 3, 4] } })).toEqual([
      { path: 'payload["a-b"]', kind: 'removed', before: 1 },
      { path: 'payload.steps[1]', kind: 'changed', before: 2, after: 3 },
      { path: 'payload.steps[2]', kind: 'added', after: 4 },
    ]);
  });
});
