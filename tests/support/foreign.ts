import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';

/** The text of a fixture in tests/fixtures/foreign/<profile>/. */
export const foreignFixture = (profile: string, name: string): string =>
  readFileSync(new URL(`../fixtures/foreign/${profile}/${name}`, import.meta.url), 'utf8');

/** Stores fixture files under the given keys, as another tool would have written them. */
export async function putFixtures(storage: StorageAdapter, profile: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [key, name] of Object.entries(files)) await storage.put(key, utf8Encode(foreignFixture(profile, name)));
}

/** The run id of the phased-workflow fixtures. */
export const PHASED_RUN = '3f1c9a7e-8b2d-4e6f-9a1b-2c3d4e5f6a7b';

/** A function that makes a temporary directory, each removed after the test that made it. Call at the top of a test file. */
export function tempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
}

/** The codes of a plan's warnings about how its snapshot was read (`checkpoint_…`; not its age). */
export const readWarningCodes = (plan: { warnings: readonly { code: string }[] }): string[] =>
  plan.warnings.map((w) => w.code).filter((c) => c.startsWith('checkpoint_'));

/** The stored text under `key`. */
export const storedText = async (storage: StorageAdapter, key: string): Promise<string> => utf8Decode((await storage.get(key))!.bytes);
