import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));

describe('examples/handoff-markdown.ts', () => {
  it('builds, carries forward, compresses under the budget, stores and resumes; exits 0', () => {
    const tsx = fileURLToPath(import.meta.resolve('tsx/cli'));
    const out = spawnSync(process.execPath, [tsx, 'examples/handoff-markdown.ts'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    expect(out.stdout).toContain('chk-002 fires: phase_completion, major_decision');
    const m = /chk-003: (\d+) tokens \(estimate\); budget (\d+); compressed to (\d+); Must Keep alone needs (\d+)/.exec(out.stdout);
    expect(m).not.toBeNull();
    expect(Number(m![3])).toBeLessThanOrEqual(Number(m![2]));
    expect(out.stdout).toContain('resume at: Phase 4: Offline mode (service worker + cached images) (next_action, eligible: true)');
    expect(out.stdout).toMatch(/----- latest\.md -----\n---\ncheckpoint: chk-003\n/);
  });
});
