/**
 * `--profile ./my-profile.js`: a store written with a custom profile can be inspected, from a
 * real module file; a missing file, a module without a profile, and one that fails to load
 * are usage errors that say which.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createWriter, jsonProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { runCliCaptured } from '../support/cli-io.js';
import { scratchFolder } from '../support/scratch.js';

const src = fileURLToPath(new URL('../../src/index.ts', import.meta.url));
const work = scratchFolder('profile-module');

const cli = (args: string[]) => runCliCaptured(args);

describe('--profile with a module file', () => {
  it('loads a custom profile (default export or "profile") and reads the store written with it', async () => {
    const dir = join(work, 'store');
    const tickets = jsonProfile({ name: 'tickets' });
    const storage = fsStorage({ dir });
    const w = createWriter({ storage, profile: tickets, runId: 'TICKET-7', heartbeatIntervalMs: false });
    expect((await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } })).ok).toBe(true);
    await w.close();
    writeFileSync(
      join(work, 'tickets.mjs'),
      `import { jsonProfile } from ${JSON.stringify(src)};\nexport default jsonProfile({ name: 'tickets' });\n`,
    );
    writeFileSync(
      join(work, 'named.mjs'),
      `import { jsonProfile } from ${JSON.stringify(src)};\nexport const profile = jsonProfile({ name: 'tickets' });\n`,
    );

    for (const file of ['tickets.mjs', 'named.mjs']) {
      const r = await cli(['runs', '--json', '--dir', dir, '--profile', join(work, file)]);
      expect(r.code, r.err).toBe(0);
      expect(JSON.parse(r.out)).toMatchObject({ profile: 'tickets', runs: [{ runId: 'TICKET-7', sequence: 1 }] });
    }
    const verify = await cli(['verify', 'TICKET-7', '--dir', dir, '--profile', join(work, 'tickets.mjs')]);
    expect(verify.code, verify.err).toBe(0);
  });

  it('a missing file, a module without a profile and a module that throws are usage errors naming the problem', async () => {
    writeFileSync(join(work, 'empty.mjs'), 'export const nothing = 1;\n');
    writeFileSync(join(work, 'broken.mjs'), "throw new Error('boom at load');\n");
    const missing = await cli(['runs', '--dir', work, '--profile', './no-such-profile.mjs']);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/profile module \.\/no-such-profile\.mjs not found/);
    const empty = await cli(['runs', '--dir', work, '--profile', join(work, 'empty.mjs')]);
    expect(empty.code).toBe(2);
    expect(empty.err).toMatch(/exports no profile/);
    const broken = await cli(['runs', '--dir', work, '--profile', join(work, 'broken.mjs')]);
    expect(broken.code).toBe(2);
    expect(broken.err).toMatch(/could not be loaded: boom at load/);
    expect((await cli(['runs', '--dir', work, '--profile', 'nosuchname'])).err).toMatch(
      /unknown profile "nosuchname"; valid: .*or a module file/,
    );
  });
});
