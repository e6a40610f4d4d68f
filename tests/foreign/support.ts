import { readFileSync } from 'node:fs';
import type { StorageAdapter } from 'savepoint';
import { utf8Encode } from '../../src/codec/utf8.js';

/** The text of a fixture in tests/fixtures/foreign/<profile>/. */
export const foreignFixture = (profile: string, name: string): string => readFileSync(new URL(`../fixtures/foreign/${profile}/${name}`, import.meta.url), 'utf8');

/** Stores fixture files under the given keys, as another tool would have written them. */
export async function putFixtures(storage: StorageAdapter, profile: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [key, name] of Object.entries(files)) await storage.put(key, utf8Encode(foreignFixture(profile, name)));
}

/** The run id of the phased-workflow fixtures. */
export const PHASED_RUN = '3f1c9a7e-8b2d-4e6f-9a1b-2c3d4e5f6a7b';
