import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { absoluteLinks, REPOSITORY } from '../../scripts/readme-links.js';
import { ROOT } from '../support/build.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const links = [...readme.matchAll(/!?\]\(([^)\s]+)\)/g)].map((m) => m[1]!);

describe('README links (shown on the npm registry page, without the files beside it)', () => {
  it('are absolute or in-page anchors (run `npx tsx scripts/readme-links.ts`)', () => {
    expect(links.filter((l) => !/^(https?:|#|mailto:)/.test(l))).toEqual([]);
    expect(absoluteLinks(readme)).toBe(readme);
  });

  it('name files this repository has, on its default branch', () => {
    const own = links
      .map((l) => l.replace(/#.*$/, ''))
      .filter(
        (l) => l.startsWith(`${REPOSITORY}/blob/main/`) || l.startsWith(REPOSITORY.replace('github.com', 'raw.githubusercontent.com')),
      )
      .map((l) =>
        l.replace(`${REPOSITORY}/blob/main/`, '').replace(`${REPOSITORY.replace('github.com', 'raw.githubusercontent.com')}/main/`, ''),
      );
    expect(own.length).toBeGreaterThan(10);
    expect(own.filter((f) => !existsSync(join(ROOT, f)))).toEqual([]);
  });

  it('point at the repository package.json names', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { repository: { url: string }; bugs: { url: string } };
    expect(pkg.repository.url).toBe(`git+${REPOSITORY}.git`);
    expect(pkg.bugs.url).toBe(`${REPOSITORY}/issues`);
  });
});
