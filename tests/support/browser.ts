import { existsSync } from 'node:fs';

/**
 * The browser suites (tests/browser, tests/ui/browser) need Debian's chromium. One rule for
 * both: without it they fail loudly with the command that installs it, unless
 * `SAVEPOINT_SKIP_BROWSER=1` is set — then they are skipped with a printed warning. A silent
 * skip would let a machine without chromium pass `npm test` having never run them.
 */
export const CHROMIUM: string | undefined =
  process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

/** True when the browser suites are skipped on request; prints why, once per suite file. */
export function skipBrowser(suite: string): boolean {
  if (process.env.SAVEPOINT_SKIP_BROWSER !== '1') return false;
  console.warn(`SAVEPOINT_SKIP_BROWSER=1: skipping ${suite} (it needs chromium; npm test is incomplete without it)`);
  return true;
}

/** Throws the install instructions when chromium is missing. */
export function assertChromium(): string {
  if (!CHROMIUM) {
    throw new Error(
      'chromium not found: the browser suites need it. Install it (Debian/Ubuntu: `sudo apt-get install chromium`), ' +
        'or point CHROMIUM_PATH at a Chromium binary, or set SAVEPOINT_SKIP_BROWSER=1 to skip these suites (with a warning).',
    );
  }
  return CHROMIUM;
}
