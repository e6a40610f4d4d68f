import { spawn } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { ensureBuilt, ROOT } from '../support/build.js';
import { buildViewerStore } from './store.js';

/** `savepoint ui` as a user runs it: the built CLI in a child process. */
function startCli(args: string[]): {
  url: Promise<string>;
  exit: Promise<number | null>;
  stderr: () => string;
  kill(signal: NodeJS.Signals): void;
} {
  const child = spawn(process.execPath, [join(ROOT, 'dist/cli.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('http'));
      if (line) resolve(line.trim());
    });
    child.on('exit', () => reject(new Error(`savepoint ui exited: ${err}`)));
  });
  url.catch(() => undefined);
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { url, exit, stderr: () => err, kill: (s) => child.kill(s) };
}

function refused(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('savepoint ui (the command)', () => {
  let store: Awaited<ReturnType<typeof buildViewerStore>>;
  beforeAll(async () => {
    await ensureBuilt();
    store = await buildViewerStore();
  }, 300_000);
  afterAll(() => store.close());

  it('prints a tokened 127.0.0.1 URL, serves the store read-only, and stops on Ctrl-C', async () => {
    const cli = startCli(['ui', '--dir', store.dir]);
    // A failed expectation must not leave the server running.
    onTestFinished(() => cli.kill('SIGKILL'));
    const url = await cli.url;
    const { port, pathname } = new URL(url);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{43}\/$/);
    await vi.waitFor(() => expect(cli.stderr()).toContain('read-only'), { timeout: 10_000 });
    expect(cli.stderr()).not.toContain(pathname.slice(1, -1));
    const runs = (await (await fetch(`${url}api/runs`)).json()) as { runId: string }[];
    expect(runs.map((r) => r.runId).sort()).toEqual(['agent-damaged', 'agent-idle', 'agent-live', 'build-finished']);
    const info = (await (await fetch(`${url}api/info`)).json()) as { allowPrune: boolean; store: string };
    expect(info).toMatchObject({ allowPrune: false, store: `dir ${store.dir}` });
    // Bound to loopback only: another address of this machine is refused.
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (external) expect(await refused(external, Number(port))).toBe(true);
    cli.kill('SIGINT');
    expect(await cli.exit).toBe(0);
  });

  it('refuses bad usage with exit 2', async () => {
    for (const args of [
      ['ui', 'extra'],
      ['ui', '--port', 'http'],
      ['ui', '--port', '70000'],
    ]) {
      const cli = startCli([...args, '--dir', store.dir]);
      expect(await cli.exit).toBe(2);
    }
  });
});
