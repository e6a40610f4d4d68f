/**
 * The progress protocol's automated profile, as a stop hook runs it (progress-protocol.md):
 * Step 1 updates .ccc-progress.md in place, Step 3 upserts the single "Checkpoint Status"
 * comment. Everything is local: a temp git repository and a small fake GitHub issue-comments
 * server on 127.0.0.1 (no network, no token).
 *
 * The second run shows fail-forward: the tracker answers 503, Step 1 still succeeds, and the
 * report says so. The hook exits 0 on partial success.
 *
 * Run: npx tsx examples/progress-protocol-stop-hook.ts
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderProgress, runCheckpointProtocol, runStopHook } from 'savepoint/progress-protocol';

// A local stand-in for GitHub's issue comments API (POST …/issues/{n}/comments, PATCH …/issues/comments/{id}).
const comments = new Map<number, string>();
let failNext = false;
let nextId = 1001;
const server = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString()));
  req.on('end', () => {
    const reply = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (failNext) {
      failNext = false;
      return reply(503, { message: 'Service Unavailable' });
    }
    const body = (JSON.parse(text || '{}') as { body?: string }).body ?? '';
    if (req.method === 'POST' && /^\/repos\/acme\/game\/issues\/12\/comments$/.test(req.url ?? '')) {
      const id = nextId++;
      comments.set(id, body);
      return reply(201, { id, body });
    }
    const m = /^\/repos\/acme\/game\/issues\/comments\/(\d+)$/.exec(req.url ?? '');
    if (req.method === 'PATCH' && m && comments.has(Number(m[1]))) {
      comments.set(Number(m[1]), body);
      return reply(200, { id: Number(m[1]), body });
    }
    return reply(404, { message: 'Not Found' });
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const address = server.address();
const apiUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

// A project: a git repository with the protocol's two files.
const dir = mkdtempSync(join(tmpdir(), 'savepoint-example-'));
const git = (...args: string[]): string => execFileSync('git', args, { cwd: dir, encoding: 'utf8' });
git('init', '-q', '-b', 'main');
git('config', 'user.name', 'Example');
git('config', 'user.email', 'example@example.invalid');
writeFileSync(join(dir, 'app.ts'), 'export {};\n');
git('add', 'app.ts');
git('commit', '-q', '-m', 'initial');
writeFileSync(join(dir, '.ccc-state.json'), `${JSON.stringify({ executionMode: 'tdd', activeTaskFiles: ['app.ts'] }, null, 2)}\n`);
writeFileSync(
  join(dir, '.ccc-progress.md'),
  renderProgress({
    issue: { id: 'GAME-12', title: 'Offline mode' },
    session: '2025-12-14T15:00:00Z',
    executionMode: 'tdd',
    completedTasks: ['Service worker registered'],
    currentTask: { description: 'Cache generated images', status: 'IndexedDB store written, eviction pending' },
    remainingTasks: ['Sync queue', 'Offline banner'],
    decisions: [{ decision: 'IndexedDB over Cache API', rationale: 'images are generated, not fetched' }],
    blockers: [],
    continuationPrompt:
      'Resume GAME-12. Current task: task 2 of 4 — Cache generated images. Key files: app.ts.\nNext action: write the LRU eviction.',
  }),
);

const env = {
  SAVEPOINT_TRACKER: 'github',
  GITHUB_TOKEN: 'example-token',
  GITHUB_REPOSITORY: 'acme/game',
  SAVEPOINT_GITHUB_ISSUE: '12',
  GITHUB_API_URL: apiUrl,
};

/**
 * What Claude Code does with the hook's stdout: the JSON decision's `reason` becomes the agent's
 * next prompt, `systemMessage` (the completion report) is shown to the user.
 */
function asClaudeCode(line: string): void {
  try {
    const decision = JSON.parse(line) as { reason: string; systemMessage: string };
    console.log(`(injected as the agent's next prompt: "${decision.reason.split('\n')[0]} …")`);
    console.log(decision.systemMessage);
  } catch {
    process.stdout.write(line); // every step failed: the report as text, nothing injected
  }
}

try {
  console.log('$ stop hook (gate 1)');
  const first = await runStopHook({ cwd: dir, env, write: asClaudeCode });
  console.log(`exit code ${first}; .ccc-state.json now: ${readFileSync(join(dir, '.ccc-state.json'), 'utf8').replace(/\s+/g, ' ').trim()}`);

  console.log('\n$ stop hook (gate 2, the tracker is down)');
  failNext = true;
  const second = await runStopHook({ cwd: dir, env, write: asClaudeCode });
  console.log(`exit code ${second}`);

  console.log('\n$ stop hook (gate 3, the tracker is back: the same comment is updated in place)');
  const third = await runStopHook({
    cwd: dir,
    env,
    write: asClaudeCode,
    progress: {
      currentTask: { description: 'Sync queue', status: 'starting' },
      completedTasks: ['Service worker registered', 'Cache generated images'],
      remainingTasks: ['Offline banner'],
    },
  });
  console.log(`exit code ${third}; comments on the issue: ${comments.size}`);
  console.log(`\nThe "Checkpoint Status" comment:\n${[...comments.values()][0]}`);

  // The manual profile (/ccc:checkpoint) would also commit in-scope files and print the prompt box:
  writeFileSync(join(dir, 'app.ts'), 'export const cache = new Map();\n');
  const manual = await runCheckpointProtocol({ cwd: dir });
  console.log(`\n$ /ccc:checkpoint (manual profile, no tracker configured)\n${manual.output}`);
  if (first !== 0 || second !== 0 || third !== 0) process.exitCode = 1;
} finally {
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
