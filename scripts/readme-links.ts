/**
 * Makes the README's links absolute (to the repository on GitHub), so they work on the
 * npm registry's page, which shows the README without the files beside it. Run after
 * editing the README: `npx tsx scripts/readme-links.ts`; tests/package/readme.process.test.ts
 * fails while a relative link is left or a link names a file the repository lacks.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { homepage: string };
/** `https://github.com/<owner>/<repo>`, from the package's homepage. */
export const REPOSITORY = pkg.homepage.replace(/#.*$/, '');
const RAW = REPOSITORY.replace('https://github.com/', 'https://raw.githubusercontent.com/');

/** The README with every relative link made absolute: images to raw files, the rest to blob/main. */
export function absoluteLinks(markdown: string): string {
  return markdown.replace(
    /(!?)\]\((?!https?:|#|mailto:)([^)\s]+)\)/g,
    (_m, bang: string, target: string) => `${bang}](${bang ? `${RAW}/main` : `${REPOSITORY}/blob/main`}/${target.replace(/^\.\//, '')})`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const path = `${ROOT}README.md`;
  writeFileSync(path, absoluteLinks(readFileSync(path, 'utf8')));
}
