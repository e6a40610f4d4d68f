import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../support/build.js';
import { freshTable, hasPostgres, usePostgres } from '../support/postgres-fixture.js';

const postgres = hasPostgres ? usePostgres() : undefined;

/**
 * A LangGraph.js app as users write it, type-checked against the packed tarball with
 * `skipLibCheck: false` and no cast at `compile({ checkpointer })`, in every module system a
 * TypeScript app uses (ESM under node16, nodenext and bundler resolution; CommonJS under
 * nodenext, the mode in which `@langchain/core`'s own CommonJS declarations type-check), then
 * run on fs and on PostgreSQL. The saver's class extends `BaseCheckpointSaver` from a peer, so its
 * declarations must resolve the peer the way the app does: an ESM app sees the peers' ESM
 * types, a CommonJS app their CommonJS types, or `@langchain/core` is typed twice and
 * `compile()` rejects the saver (TS2322).
 *
 * The tarball is unpacked as `node_modules/savepoint` and the peers are linked from this
 * checkout's `node_modules` (no network, no npm cache needed).
 */
const APP = `
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage } from 'savepoint/postgres';

const State = Annotation.Root({ count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });

// The store: a directory, or a PostgreSQL connection string and table.
function open(where: string, table: string | undefined): StorageAdapter {
  return table === undefined ? fsStorage({ dir: where }) : postgresStorage({ connectionString: where, table });
}

async function main(where: string, table: string | undefined): Promise<void> {
  const storage = open(where, table);
  const checkpointer = new SavepointSaver({ storage });
  const graph = new StateGraph(State)
    .addNode('inc', () => ({ count: 1 }))
    .addEdge(START, 'inc')
    .addEdge('inc', END)
    .compile({ checkpointer });
  const config = { configurable: { thread_id: 'consumer' } };
  await graph.invoke({ count: 1 }, config);
  const state = await graph.invoke({ count: 1 }, config);
  const other = open(where, table);
  const tuple = await new SavepointSaver({ storage: other }).getTuple(config);
  console.log(JSON.stringify({ count: state.count, stored: tuple?.checkpoint.channel_values['count'] }));
  await storage.close?.();
  await other.close?.();
}

main(process.argv[2]!, process.argv[3]).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
`;

interface Variant {
  readonly name: string;
  readonly packageType: 'module' | 'commonjs';
  readonly module: string;
  readonly moduleResolution: string;
}

const VARIANTS: readonly Variant[] = [
  { name: 'esm-node16', packageType: 'module', module: 'node16', moduleResolution: 'node16' },
  { name: 'esm-nodenext', packageType: 'module', module: 'nodenext', moduleResolution: 'nodenext' },
  { name: 'esm-bundler', packageType: 'module', module: 'esnext', moduleResolution: 'bundler' },
  { name: 'cjs-nodenext', packageType: 'commonjs', module: 'nodenext', moduleResolution: 'nodenext' },
];

/** Runtime dependencies of savepoint and the peers the app uses, linked from this checkout. */
const LINKED = ['zod', 'ajv', 'fflate', '@langchain', 'pg'];

describe('a LangGraph app built against the packed package', () => {
  let root = '';
  let tarball = '';

  beforeAll(async () => {
    await ensureBuilt();
    root = mkdtempSync(join(tmpdir(), 'savepoint-langgraph-consumer-'));
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', root], { cwd: ROOT, stdio: 'ignore' });
    tarball = join(
      root,
      readdirSync(root).find((f) => f.endsWith('.tgz'))!,
    );
  }, 300_000);

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  function project(variant: Variant): string {
    const dir = join(root, variant.name);
    const modules = join(dir, 'node_modules');
    mkdirSync(join(modules, '@types'), { recursive: true });
    execFileSync('tar', ['-xzf', tarball, '-C', modules]);
    renameSync(join(modules, 'package'), join(modules, 'savepoint'));
    for (const dep of LINKED) symlinkSync(join(ROOT, 'node_modules', dep), join(modules, dep), 'dir');
    for (const types of ['node', 'pg']) symlinkSync(join(ROOT, 'node_modules', '@types', types), join(modules, '@types', types), 'dir');
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: variant.name, version: '1.0.0', private: true, type: variant.packageType }),
    );
    writeFileSync(join(dir, 'app.ts'), APP);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          skipLibCheck: false,
          module: variant.module,
          moduleResolution: variant.moduleResolution,
          target: 'es2022',
          types: ['node', 'pg'],
          outDir: 'out',
        },
        files: ['app.ts'],
      }),
    );
    return dir;
  }

  for (const variant of VARIANTS) {
    it(`${variant.name}: compiles with skipLibCheck false and no cast, then runs on fs and PostgreSQL`, () => {
      const dir = project(variant);
      const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      const built = spawnSync(process.execPath, [tsc, '-p', dir], { cwd: dir, encoding: 'utf8' });
      expect(built.stdout + built.stderr).toBe('');
      expect(built.status).toBe(0);
      const run = (...args: string[]): unknown =>
        JSON.parse(execFileSync(process.execPath, [join(dir, 'out', 'app.js'), ...args], { cwd: dir, encoding: 'utf8' }));
      expect(run(join(dir, 'store'))).toEqual({ count: 4, stored: 4 });
      if (postgres) expect(run(postgres.server().url, freshTable('consumer'))).toEqual({ count: 4, stored: 4 });
    }, 120_000);
  }
});
