import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * A scratch directory for one test file under the OS's temporary directory (removed after
 * the file's tests), and a function that makes a new empty directory in it for each store.
 */
export function scratchDirs(name: string): () => string {
  const scratch = mkdtempSync(join(tmpdir(), `savepoint-${name}-`));
  // A store a test left open may still be applying its journal there: retried, not failed at once.
  afterAll(() => rmSync(scratch, { recursive: true, force: true, maxRetries: 5 }));
  let counter = 0;
  return () => {
    const dir = join(scratch, `d${counter++}`);
    mkdirSync(dir);
    return dir;
  };
}
