/**
 * Bundle size of the core entry (`import … from 'savepoint'`), minified and gzipped with
 * every dependency included, as a browser or edge bundle would ship it; and of its parts,
 * so the figure can be read. There is no baseline to beat: the rows report the figure
 * (issue 9: "keep it small and say the figure").
 */
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { BenchRow } from './harness.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function size(contents: string, external: string[] = []): Promise<{ min: number; gz: number }> {
  const r = await build({
    stdin: { contents, resolveDir: ROOT, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
    external,
  });
  const bytes = r.outputFiles[0]!.contents;
  return { min: bytes.length, gz: gzipSync(bytes, { level: 9 }).length };
}

const kb = (n: number): string => `${(n / 1024).toFixed(1)} KB`;

export async function bench(): Promise<BenchRow[]> {
  const all = await size(`export * from './src/index.ts';`);
  const own = await size(`export * from './src/index.ts';`, ['zod', 'ajv', 'ajv/*', 'fflate', 'nanoid']);
  const zod = await size(`import { z } from 'zod'; console.log(z);`);
  const ajv = await size(`import A from 'ajv/dist/2020.js'; console.log(new A());`);
  // What the root entry exported before each spec system got its own subpath (issue 14):
  // today's root plus the toolkit and the three JSON spec subpaths.
  const oldRoot = await size(
    ['index', 'entries/toolkit', 'entries/snapshot-lifecycle', 'entries/phased-workflow', 'entries/plan-executor'].map((e) => `export * from './src/${e}.ts';`).join('\n'),
  );
  const github = await size(`export * from './src/entries/github.ts';`, ['zod', 'ajv', 'ajv/*', 'fflate', 'nanoid']);
  const row = (name: string, s: { min: number; gz: number }, note = '—'): BenchRow => ({
    area: 'package',
    name,
    savepoint: `${kb(s.gz)} gzip (${kb(s.min)} min)`,
    baseline: '—',
    ratio: note,
    target: 'report',
    met: true,
  });
  return [
    row('core entry, minified + gzip, all dependencies', all, `${Math.round((zod.gz / all.gz) * 100)}% is zod`),
    row('root entry before the per-spec subpaths (root + toolkit + 3 spec entries)', oldRoot, `root now is ${Math.round((all.gz / oldRoot.gz) * 100)}% of it`),
    row("  of which savepoint's own code (incl. precompiled validators)", own),
    row('  zod (chosen dependency, whole z namespace)', zod),
    row('  ajv (run-time compile of custom schemas)', ajv),
    row('savepoint/github, own code', github),
  ];
}
