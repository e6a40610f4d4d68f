import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { scratchFolder } from '../support/scratch.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = scratchFolder('conditions');

/** A worker-style program: the root entry only, a checkpoint into memory, resumed. */
const program = `
  import { createWriter, memoryStorage, planResume, defaultProfile } from './src/index.ts';
  const storage = memoryStorage();
  const writer = createWriter({ storage, runId: 'w1', heartbeatIntervalMs: false });
  const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 7 } });
  await writer.close();
  const plan = await planResume({ storage, profile: defaultProfile, runId: 'w1' });
  globalThis.__result = JSON.stringify({ ok: r.ok, id: r.ok ? r.snapshotId : null, payload: plan.payload });
`;

/**
 * The core bundles for runtimes that are not Node: esbuild's neutral platform, and the
 * `worker` / `workerd` (Cloudflare) conditions, where no `node:` module resolves. (nanoid's
 * Node entry imported `node:crypto` and broke them.) The bundle then runs, in a Node child
 * that stands in for the runtime (it only uses globals a worker has: WebCrypto, TextEncoder).
 */
describe.each([
  { name: 'neutral', platform: 'neutral' as const, conditions: [] as string[] },
  { name: 'worker', platform: 'neutral' as const, conditions: ['worker'] },
  { name: 'workerd', platform: 'neutral' as const, conditions: ['workerd', 'worker'] },
])('the root entry bundled for $name', ({ name, platform, conditions }) => {
  it('bundles without any node: import and runs a checkpoint and a resume', async () => {
    const out = join(dir, `${name}.mjs`);
    const result = await build({
      stdin: { contents: program, resolveDir: ROOT, sourcefile: 'program.ts', loader: 'ts' },
      bundle: true,
      format: 'esm',
      platform,
      conditions,
      mainFields: ['module', 'main'],
      outfile: out,
      define: { __SAVEPOINT_VERSION__: '"0.0.0-test"' },
      logLevel: 'silent',
      metafile: true,
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((i) => i.startsWith('node:'))).toEqual([]);
    const runner = join(dir, `${name}-run.mjs`);
    writeFileSync(runner, `await import(${JSON.stringify(out)}); console.log(globalThis.__result);`);
    const { stdout } = await promisify(execFile)(process.execPath, [runner]);
    const parsed = JSON.parse(stdout) as { ok: boolean; id: string; payload: unknown };
    expect(parsed.ok).toBe(true);
    expect(parsed.id).toMatch(/^cp_\d{8}T\d{9}Z_[0-9a-z]{10}$/);
    expect(parsed.payload).toEqual({ step: 7 });
  }, 120_000);
});
