import { existsSync } from 'node:fs';

/**
 * The browser suites (tests/browser, tests/ui/browser) need Debian's chromium. The rule is the
 * PostgreSQL suites' (postgres-server.ts): in CI (`CI=true`) a missing chromium fails loudly
 * with the command that installs it, so a green CI run means the suites ran; on a developer's
 * machine they are skipped with a printed warning, so `npm test` works right after `npm ci`.
 * `SAVEPOINT_SKIP_BROWSER=1` skips them anywhere (with the warning).
 */
export const CHROMIUM: string | undefined =
  process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

const INSTALL = 'Install it (Debian/Ubuntu: `sudo apt-get install chromium`; .ci/run does), or point CHROMIUM_PATH at a Chromium binary';

const inCi = (): boolean => process.env.CI === 'true' || process.env.CI === '1';

/** True when the browser suites are skipped (on request, or chromium missing outside CI); prints why, once per suite file. */
export function skipBrowser(suite: string): boolean {
  if (process.env.SAVEPOINT_SKIP_BROWSER === '1') {
    console.warn(`SAVEPOINT_SKIP_BROWSER=1: skipping ${suite} (it needs chromium; npm test is incomplete without it)`);
    return true;
  }
  if (CHROMIUM || inCi()) return false;
  console.warn(`\n*** SKIPPING ${suite}: chromium not found. ${INSTALL}. npm test is incomplete without it. ***\n`);
  return true;
}

/** Throws the install instructions when chromium is missing (in CI, where the suites never skip for it). */
export function assertChromium(): string {
  if (!CHROMIUM)
    throw new Error(`chromium not found: the browser suites need it. ${INSTALL}, or set SAVEPOINT_SKIP_BROWSER=1 to skip them.`);
  return CHROMIUM;
}
