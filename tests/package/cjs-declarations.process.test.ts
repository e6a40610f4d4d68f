import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../support/build.js';

/**
 * scripts/cjs-declarations.mjs writes each `dist/*.d.cts` from its `.d.ts`: the same text, with
 * the relative imports of files the build wrote renamed to their CommonJS siblings, so that a
 * CommonJS app's types resolve the peers' CommonJS declarations (tests/package/langgraph-consumers
 * checks that end to end on the real build).
 */
describe('the CommonJS declarations written from the ESM ones', () => {
  let dist = '';
  afterEach(() => rmSync(dist, { recursive: true, force: true }));

  const build = (files: Record<string, string>): Record<string, string> => {
    dist = mkdtempSync(join(tmpdir(), 'savepoint-cjs-declarations-'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dist, name), text);
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'cjs-declarations.mjs'), dist], { stdio: 'pipe' });
    return Object.fromEntries(
      readdirSync(dist)
        .filter((f) => f.endsWith('.d.cts'))
        .map((f) => [f, readFileSync(join(dist, f), 'utf8')]),
    );
  };

  it('renames every form of relative import of a built file, and nothing else', () => {
    const written = build({
      'index.d.ts': [
        "import { A as Clock } from './clock-B6HobdU0.js';",
        "import './storage-LC6ht-7k.js';",
        'export { S as Storage } from "./storage-LC6ht-7k.js";',
        "type T = import('./clock-B6HobdU0.js').Clock;",
        "import { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';",
        "/** import { myStorage } from '../src/my-storage.js'; fsStorage({ dir: './checkpoints' }) from './notes.js' */",
        'export { Clock, BaseCheckpointSaver, T };',
      ].join('\n'),
      'clock-B6HobdU0.d.ts': 'export interface Clock { now(): Date }\n',
      'storage-LC6ht-7k.d.ts': "import { Clock } from './clock-B6HobdU0.js';\nexport interface S { clock: Clock }\n",
    });
    expect(Object.keys(written).sort()).toEqual(['clock-B6HobdU0.d.cts', 'index.d.cts', 'storage-LC6ht-7k.d.cts']);
    expect(written['index.d.cts']!.split('\n')).toEqual([
      "import { A as Clock } from './clock-B6HobdU0.cjs';",
      "import './storage-LC6ht-7k.cjs';",
      'export { S as Storage } from "./storage-LC6ht-7k.cjs";',
      "type T = import('./clock-B6HobdU0.cjs').Clock;",
      "import { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';",
      "/** import { myStorage } from '../src/my-storage.js'; fsStorage({ dir: './checkpoints' }) from './notes.js' */",
      'export { Clock, BaseCheckpointSaver, T };',
    ]);
    expect(written['storage-LC6ht-7k.d.cts']).toBe("import { Clock } from './clock-B6HobdU0.cjs';\nexport interface S { clock: Clock }\n");
    expect(written['clock-B6HobdU0.d.cts']).toBe('export interface Clock { now(): Date }\n');
  });

  it('refuses a directory without declarations (tsup did not run)', () => {
    expect(() => build({ 'index.js': 'export {};\n' })).toThrow(/no \.d\.ts files/);
  });
});
