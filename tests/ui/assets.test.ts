import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { renderUiAssets } from '../../scripts/build-ui.js';
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
