import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/crash-and-resume.ts', () => {
  it('kills its child with SIGKILL, resumes the run, finishes it and exits 0', () => {
    const tsx = fileURLToPath(import.meta.resolve('tsx/cli'));
    const out = spawnSync(process.execPath, [tsx, 'examples/crash-and-resume.ts'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(out.status).toBe(0);
    expect(out.stdout).toContain('child exited by SIGKILL');
    expect(out.stdout).toMatch(/run 5f2b8c1e-9d4a-4e7b-a3c6-0b1d2e3f4a5b: status in_progress at checkpoint \d+/);
    expect(out.stdout).toMatch(
      /RESUME: Continuing run 5f2b8c1e-9d4a-4e7b-a3c6-0b1d2e3f4a5b from checkpoint [0-9a-f-]{36}\n\s+Resume point: phase_\d(_5)?_[a-z]+\n/,
    );
    expect(out.stdout).toContain('checkpoint 10: phase_8_retro complete');
    expect(out.stdout).toContain('at workflow_complete, eligible false');
    expect(out.stdout).toContain('incomplete runs now: 0');
  });
});
