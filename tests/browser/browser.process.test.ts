import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { ensureBuilt, ROOT } from '../support/build.js';
import { assertChromium, skipBrowser } from '../support/browser.js';

/**
 * The core, memoryStorage and githubStorage in a real browser (Debian's chromium driven by
 * playwright-core), on a page served from 127.0.0.1 with a Content-Security-Policy that
 * forbids 'unsafe-eval'. The page's script is bundled from dist/, as a user's bundler
 * would; bundling for the browser platform fails if the core reaches a node: module.
 * `.ci/run` installs chromium; without it this suite fails with the install command, unless
 * SAVEPOINT_SKIP_BROWSER=1 skips it with a warning (tests/support/browser.ts).
 */
const CSP = "default-src 'none'; script-src 'self'; connect-src 'self'";
const TOKEN = 'ghp_browsertest000000000000000000000000';

describe.skipIf(skipBrowser('tests/browser'))('in a browser, under a CSP without unsafe-eval', () => {
  let server: Server;
  let gh: GitHubEmulator;
  let browser: Browser;
  let origin = '';
  let script = '';

  beforeAll(async () => {
    const executablePath = assertChromium();
    await ensureBuilt();
    const bundle = await build({
      entryPoints: [join(ROOT, 'tests/browser/page.ts')],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      // The built package, as a user's bundler would see it.
      alias: {
        savepoint: join(ROOT, 'dist/index.js'),
        'savepoint/github': join(ROOT, 'dist/github.js'),
        'savepoint/toolkit': join(ROOT, 'dist/toolkit.js'),
        'savepoint/phased-workflow': join(ROOT, 'dist/phased-workflow.js'),
      },
      metafile: true,
      // dist/ is bundled by path here, so esbuild reports the sideEffects:false chunk imports it drops;
      // under node_modules (as users install it) it does not.
      logLevel: 'error',
    });
    script = bundle.outputFiles[0]!.text;
    const inputs = Object.keys(bundle.metafile!.inputs);
    if (!inputs.includes('dist/github.js') || inputs.some((i) => i.startsWith('src/'))) {
      throw new Error(`the page must be bundled from dist/, not src/: ${inputs.filter((i) => !i.startsWith('node_modules')).join(', ')}`);
    }
    gh = await startGitHubEmulator({ owner: 'acme', repo: 'checkpoints', token: TOKEN, secondaryLimit: false });
    const upstream = new URL(gh.url);
    server = createServer((req, res) => {
      const url = req.url ?? '/';
      if (url.startsWith('/gh/')) {
        // Same-origin proxy to the emulator, so the page needs no CORS.
        const proxied = request(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: req.method,
            path: `${upstream.pathname.replace(/\/$/, '')}${url.slice(3)}`,
            headers: { ...req.headers, host: upstream.host },
          },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        req.pipe(proxied);
        return;
      }
      if (url === '/page.js') {
        res.writeHead(200, { 'content-type': 'text/javascript', 'content-security-policy': CSP });
        res.end(script);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html', 'content-security-policy': CSP });
      res.end('<!doctype html><meta charset="utf-8"><title>savepoint</title><script type="module" src="/page.js"></script>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await chromium.launch({
      executablePath,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    if (server) await new Promise((r) => server.close(r));
    await gh?.close();
  });

  it('writes, resumes and validates with memoryStorage and githubStorage; run-time compilation is refused', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${origin}/?token=${TOKEN}`);
    await page.waitForFunction(() => (window as { __savepoint?: unknown }).__savepoint !== undefined, undefined, { timeout: 60_000 });
    const outcome = (await page.evaluate(() => (window as { __savepoint?: unknown }).__savepoint)) as {
      ok: boolean;
      error?: string;
      results: Record<string, unknown>;
      violations: string[];
    };
    expect(errors).toEqual([]);
    expect(outcome.error).toBeUndefined();
    expect(outcome.ok).toBe(true);
    expect(outcome.results.nodeGlobals).toBe(true);
    expect(outcome.results.memory).toEqual({
      sequence: 3,
      payload: { step: 3 },
      tamperCode: 'checkpoint_integrity_mismatch',
      fallbackSequence: 3,
      fallbackSkipped: ['checkpoint_integrity_mismatch'],
    });
    expect(outcome.results.github).toMatchObject({ at: 'phase_0_5' }); // phase_0 completed; the spec orders phase_0_5 next
    expect(String((outcome.results.github as { message: string }).message)).toContain(
      'RESUME: Continuing run 0f8fad5b-d9cb-469f-a165-70867728950e',
    );
    // The CSP is in force: compiling an unknown schema needs eval and is refused.
    expect(outcome.results.runtimeCompile).toBe('EvalError');
    await page.close();
  });
});
