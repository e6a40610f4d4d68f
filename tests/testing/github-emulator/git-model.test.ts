import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitStore, gitBlobShaOf, gitCommitShaOf, gitTreeShaOf, type GitTreeEntry } from 'savepoint/testing';
import { gitBlobSha } from 'savepoint/github';

// The emulator's object ids must be git's object ids: checked against the real git binary.
let dir = '';
const git = (args: string[], input?: string | Uint8Array, env: Record<string, string> = {}): string =>
  execFileSync('git', args, { cwd: dir, input, env: { ...process.env, ...env }, encoding: 'utf8' }).trim();

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'savepoint-git-'));
  git(['init', '-q']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));

describe('git object ids', () => {
  it('blob ids match git hash-object, in the emulator and in the adapter (WebCrypto)', async () => {
    const samples = [
      new Uint8Array(),
      new TextEncoder().encode('hello\n'),
      new TextEncoder().encode('{"a":"ü€😀"}'),
      Uint8Array.from([0, 1, 2, 255, 254, 10, 13]),
    ];
    for (const bytes of samples) {
      const expected = git(['hash-object', '--stdin'], bytes);
      expect(gitBlobShaOf(bytes)).toBe(expected);
      expect(await gitBlobSha(bytes)).toBe(expected);
    }
  });

  it('blob ids agree between emulator and adapter for arbitrary bytes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (bytes) => {
        expect(await gitBlobSha(bytes)).toBe(gitBlobShaOf(bytes));
      }),
      { numRuns: 200 },
    );
  });

  it('tree ids match git mktree, including git ordering of trees named like files', () => {
    const store = createGitStore();
    const a = store.putBlob(new TextEncoder().encode('a\n'));
    const b = store.putBlob(new TextEncoder().encode('b\n'));
    const sub = store.putTree([{ mode: '100644', type: 'blob', name: 'x.json', sha: a }]);
    const entries: GitTreeEntry[] = [
      { mode: '100644', type: 'blob', name: 'foo.txt', sha: a },
      { mode: '040000', type: 'tree', name: 'foo', sha: sub },
      { mode: '100644', type: 'blob', name: 'foo-bar', sha: b },
      { mode: '100755', type: 'blob', name: 'run.sh', sha: b },
      { mode: '100644', type: 'blob', name: 'Ünïcode.json', sha: a },
    ];
    // mktree needs the objects it references to exist in the repository.
    git(['hash-object', '-w', '--stdin'], 'a\n');
    git(['hash-object', '-w', '--stdin'], 'b\n');
    const subLine = `100644 blob ${a}\tx.json\n`;
    expect(git(['mktree'], subLine)).toBe(sub);
    const lines = entries.map((e) => `${e.mode} ${e.type} ${e.sha}\t${e.name}`).join('\n') + '\n';
    expect(git(['mktree'], lines)).toBe(gitTreeShaOf(entries));
    expect(store.putTree(entries)).toBe(gitTreeShaOf(entries));
  });

  it('commit ids match git commit-tree', () => {
    const tree = git(['mktree'], '');
    const date = '2025-12-05T10:20:30Z';
    const env = {
      GIT_AUTHOR_NAME: 'Ada',
      GIT_AUTHOR_EMAIL: 'ada@example.com',
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_NAME: 'Bob',
      GIT_COMMITTER_EMAIL: 'bob@example.com',
      GIT_COMMITTER_DATE: '2025-12-05T11:00:00+02:00',
    };
    const first = git(['commit-tree', tree, '-m', 'first'], undefined, env);
    const second = git(['commit-tree', tree, '-p', first, '-m', 'second'], undefined, env);
    const data = (message: string, parents: string[]) => ({
      tree,
      parents,
      author: { name: 'Ada', email: 'ada@example.com', date },
      committer: { name: 'Bob', email: 'bob@example.com', date: '2025-12-05T11:00:00+02:00' },
      message,
    });
    // git commit-tree -m ends the message with a newline.
    expect(gitCommitShaOf(data('first\n', []))).toBe(first);
    expect(gitCommitShaOf(data('second\n', [first]))).toBe(second);
  });

  it('applyChanges builds the same tree as git for nested writes and deletes', () => {
    const store = createGitStore();
    const enc = new TextEncoder();
    const t1 = store.applyChanges(undefined, [
      { path: 'checkpoints/r1/latest.json', entry: { mode: '100644', type: 'blob', sha: store.putBlob(enc.encode('{}')) } },
      { path: 'checkpoints/r1/cp_001_manual.json', entry: { mode: '100644', type: 'blob', sha: store.putBlob(enc.encode('{"n":1}')) } },
      { path: 'README.md', entry: { mode: '100644', type: 'blob', sha: store.putBlob(enc.encode('# r\n')) } },
    ]);
    const t2 = store.applyChanges(t1, [{ path: 'checkpoints/r1/latest.json', entry: null }]);
    const t3 = store.applyChanges(t2, [{ path: 'checkpoints/r1/cp_001_manual.json', entry: null }]);
    // Build the same trees with git's index.
    for (const [path, content] of [
      ['checkpoints/r1/latest.json', '{}'],
      ['checkpoints/r1/cp_001_manual.json', '{"n":1}'],
      ['README.md', '# r\n'],
    ] as const) {
      const sha = git(['hash-object', '-w', '--stdin'], content);
      git(['update-index', '--add', '--cacheinfo', `100644,${sha},${path}`]);
    }
    expect(git(['write-tree'])).toBe(t1);
    git(['update-index', '--force-remove', 'checkpoints/r1/latest.json']);
    expect(git(['write-tree'])).toBe(t2);
    git(['update-index', '--force-remove', 'checkpoints/r1/cp_001_manual.json']);
    expect(git(['write-tree'])).toBe(t3);
    // The emptied directories are gone, as in git.
    expect(store.walk(t3).map((e) => e.path)).toEqual(['README.md']);
  });
});
