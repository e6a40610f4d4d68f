import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

describe("the README's first example", () => {
  it('is examples/readme.ts between its markers, so the examples test type-checks and runs what a reader copies', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const first = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    const example = readFileSync(join(ROOT, 'examples', 'readme.ts'), 'utf8');
    const between = /\/\/ --- README ---\n([\s\S]*?)\/\/ --- end README ---/.exec(example)?.[1];
    expect(first).toBeDefined();
    expect(between).toBe(first);
  });
});
