import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * A new empty folder `savepoint-<name>-…` under `parent` (the OS's temporary directory) for one
 * test file, removed after the file's tests.
 */
export function scratchFolder(name: string, parent: string = tmpdir()): string {
  const dir = mkdtempSync(join(parent, `savepoint-${name}-`));
  // A store a test left open may still be applying its journal there: retried, not failed at once.
  afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  return dir;
}

/**
 * A scratch folder for one test file (see {@link scratchFolder}), and a function that makes a
 * new empty directory in it for each store.
 */
export function scratchDirs(name: string): () => string {
  const scratch = scratchFolder(name);
  let counter = 0;
  return () => {
    const dir = join(scratch, `d${counter++}`);
    mkdirSync(dir);
    return dir;
  };
}
