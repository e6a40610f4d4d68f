import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../support/build.js';

interface PackFile {
  path: string;
}

describe('npm pack contents', () => {
  let files: string[] = [];
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };

  beforeAll(async () => {
    await ensureBuilt();
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    files = (JSON.parse(out) as { files: PackFile[] }[])[0]!.files.map((f) => f.path).sort();
  }, 180_000);

  it('ships README, DESIGN, LICENSE, CHANGELOG and package.json', () => {
    for (const f of ['README.md', 'DESIGN.md', 'LICENSE', 'CHANGELOG.md', 'package.json']) expect(files).toContain(f);
  });

  it('ships ESM, CJS and both type flavours for every subpath in the exports map', () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      const t = target as { import: { types: string; default: string }; require: { types: string; default: string } };
      for (const file of [t.import.types, t.import.default, t.require.types, t.require.default]) {
        expect(files, `${subpath} → ${file}`).toContain(file.replace(/^\.\//, ''));
      }
    }
  });

  it('ships nothing but dist and the documents: no sources, tests, fixtures, examples or source maps', () => {
    // The CLI's --json output schemas ship too (schemas/cli/<command>.v<N>.json), for scripts to validate against.
    const allowed =
      /^(dist\/[^/]+\.(js|cjs|d\.ts|d\.cts)|schemas\/cli\/[a-z-]+\.v\d+\.json|README\.md|DESIGN\.md|LICENSE|CHANGELOG\.md|package\.json)$/;
    expect(files.filter((f) => !allowed.test(f))).toEqual([]);
    expect(files.some((f) => /(^|\/)(src|tests|examples|bench|fixtures)\//.test(f))).toBe(false);
    expect(files.some((f) => f.endsWith('.map'))).toBe(false);
  });
});
