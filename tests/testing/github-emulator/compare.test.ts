/**
 * The emulator's compare endpoint, `GET /compare/{base}...{head}`, spoken to over raw HTTP:
 * GitHub's `status` / `ahead_by` / `behind_by`, the files from the merge base to head, and
 * branch-named heads lagging under the stale-read fault while shas never do.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { TOKEN } from '../../support/github.js';

const open: GitHubEmulator[] = [];
afterEach(async () => {
  for (const gh of open.splice(0)) await gh.close();
});

async function start(): Promise<GitHubEmulator> {
  const gh = await startGitHubEmulator({ token: TOKEN });
  open.push(gh);
  return gh;
}

async function compare(gh: GitHubEmulator, base: string, head: string) {
  const res = await fetch(`${gh.url}/repos/${gh.owner}/${gh.repo}/compare/${base}...${head}`, {
    headers: { authorization: `Bearer ${TOKEN}`, accept: 'application/vnd.github+json' },
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const summary = (json: Record<string, unknown>) => ({ status: json.status, ahead_by: json.ahead_by, behind_by: json.behind_by });

describe('emulator: compare two commits', () => {
  it('ahead, behind and identical on one line of history; the files are those head changed since base', async () => {
    const gh = await start();
    const c1 = gh.state.commitFiles({ 'a.txt': 'one' });
    const c2 = gh.state.commitFiles({ 'b.txt': 'two' });
    const c3 = gh.state.commitFiles({ 'a.txt': 'three', 'b.txt': null });
    const ahead = await compare(gh, c1, 'main');
    expect(ahead.status).toBe(200);
    expect(summary(ahead.json)).toEqual({ status: 'ahead', ahead_by: 2, behind_by: 0 });
    expect((ahead.json.commits as { sha: string }[]).map((c) => c.sha)).toEqual([c2, c3]);
    expect((ahead.json.merge_base_commit as { sha: string }).sha).toBe(c1);
    expect((ahead.json.files as { filename: string; status: string }[]).map((f) => [f.filename, f.status])).toEqual([
      ['a.txt', 'modified'],
    ]);
    expect(summary((await compare(gh, c3, c1)).json)).toEqual({ status: 'behind', ahead_by: 0, behind_by: 2 });
    const same = await compare(gh, c3, 'main');
    expect(summary(same.json)).toEqual({ status: 'identical', ahead_by: 0, behind_by: 0 });
    expect(same.json.files).toEqual([]);
    expect(gh.schemaViolations).toEqual([]);
  });

  it('diverged after the branch was rewritten; 404 for a commit it does not have', async () => {
    const gh = await start();
    const c1 = gh.state.commitFiles({ 'a.txt': 'one' });
    const lost = gh.state.commitFiles({ 'a.txt': 'lost' });
    gh.state.store.refs.set('main', c1);
    gh.state.commitFiles({ 'a.txt': 'rewritten' });
    const diverged = await compare(gh, lost, 'main');
    expect(summary(diverged.json)).toEqual({ status: 'diverged', ahead_by: 1, behind_by: 1 });
    expect((diverged.json.merge_base_commit as { sha: string }).sha).toBe(c1);
    expect((await compare(gh, 'f'.repeat(40), 'main')).status).toBe(404);
    expect(gh.schemaViolations).toEqual([]);
  });

  it('under the stale-read fault a branch-named head lags, a sha does not', async () => {
    const gh = await start();
    const c1 = gh.state.commitFiles({ 'a.txt': 'one' });
    const c2 = gh.state.commitFiles({ 'a.txt': 'two' });
    gh.faults.add({ operation: 'repos/compare-commits-with-basehead', fault: { kind: 'stale-read' }, times: 2 });
    expect(summary((await compare(gh, c2, 'main')).json)).toEqual({ status: 'behind', ahead_by: 0, behind_by: 1 });
    expect(summary((await compare(gh, c1, c2)).json)).toEqual({ status: 'ahead', ahead_by: 1, behind_by: 0 });
  });

  it('property: on a forked history, ahead_by and behind_by count the commits of each side, and swapping base and head swaps them', async () => {
    const gh = await start();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 4 }), fc.nat({ max: 4 }), fc.nat({ max: 4 }), async (shared, onA, onB) => {
        const a = `a${++run}`;
        const b = `b${run}`;
        gh.state.store.refs.set(a, gh.state.head()!);
        for (let i = 0; i < shared; i++) gh.state.commitFiles({ [`${a}/shared-${i}`]: 's' }, { branch: a });
        gh.state.store.refs.set(b, gh.state.head(a)!);
        for (let i = 0; i < onA; i++) gh.state.commitFiles({ [`${a}/a-${i}`]: 'a' }, { branch: a });
        for (let i = 0; i < onB; i++) gh.state.commitFiles({ [`${a}/b-${i}`]: 'b' }, { branch: b });
        const expected = onA === 0 ? (onB === 0 ? 'identical' : 'ahead') : onB === 0 ? 'behind' : 'diverged';
        expect(summary((await compare(gh, a, b)).json)).toEqual({ status: expected, ahead_by: onB, behind_by: onA });
        const swapped = summary((await compare(gh, b, a)).json);
        expect([swapped.ahead_by, swapped.behind_by]).toEqual([onA, onB]);
      }),
      { numRuns: 25 },
    );
    expect(gh.schemaViolations).toEqual([]);
  });
});
