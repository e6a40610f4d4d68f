/**
 * Bundle size of the core entry (`import … from 'savepoint'`), minified and gzipped with
 * every dependency included, as a browser or edge bundle would ship it; and of its parts,
 * so the figure can be read. There is no baseline to beat: the rows report the figure
 * (issue 9: "keep it small and say the figure").
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { BenchRow } from './harness.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function size(
  contents: string,
  external: string[] = [],
  target: { platform: 'browser' | 'neutral'; conditions?: readonly string[] } = { platform: 'browser' },
): Promise<{ min: number; gz: number }> {
  const r = await build({
    stdin: { contents, resolveDir: ROOT, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: target.platform,
    ...(target.conditions ? { conditions: [...target.conditions] } : {}),
    mainFields: ['module', 'main'],
    define: { __SAVEPOINT_VERSION__: '"0.0.0"' },
    write: false,
    logLevel: 'silent',
    external,
  });
  const bytes = r.outputFiles[0]!.contents;
  return { min: bytes.length, gz: gzipSync(bytes, { level: 9 }).length };
}

const kb = (n: number): string => `${(n / 1024).toFixed(1)} KB`;

/** The first use: a writer with the default profile on the memory store (issue 18's core figure). */
const FIRST_USE = `import { createWriter, defaultProfile, memoryStorage } from './src/index.ts'; console.log(createWriter, defaultProfile, memoryStorage);`;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Cold `import('savepoint')` of the built dist, in fresh processes; undefined without a build. */
function coldImportMs(runs = 7): number | undefined {
  const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
  if (!existsSync(dist)) return undefined;
  const script = `const t = performance.now(); await import(${JSON.stringify(dist)}); console.log(performance.now() - t);`;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })));
  return median(times);
}

/** `npm pack --dry-run` sizes of the built package; undefined without a build. */
function tarball(): { packed: number; unpacked: number; files: number; twice: number } | undefined {
  if (!existsSync(fileURLToPath(new URL('../dist/index.js', import.meta.url)))) return undefined;
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const [info] = JSON.parse(out) as { size: number; unpackedSize: number; files: { path: string; size: number }[] }[];
  const bySize = new Map<string, number>();
  // A file shipped twice: same size and same base name under two paths (a copied chunk, a twin .d.ts).
  for (const f of info!.files) {
    const k = `${f.path.split('/').pop()!.replace(/\.(d\.)?c?[jt]s$/, '')}:${f.size}`;
    bySize.set(k, (bySize.get(k) ?? 0) + 1);
  }
  return { packed: info!.size, unpacked: info!.unpackedSize, files: info!.files.length, twice: [...bySize.values()].filter((n) => n > 1).length };
}

export async function bench(): Promise<BenchRow[]> {
  const all = await size(`export * from './src/index.ts';`);
  const own = await size(`export * from './src/index.ts';`, ['zod', 'ajv', 'ajv/*', 'fflate']);
  const zod = await size(`import { z } from 'zod'; console.log(z);`);
  const ajv = await size(`import A from 'ajv/dist/2020.js'; console.log(new A());`);
  // What the root entry exported before each spec system got its own subpath (issue 14):
  // today's root plus the toolkit and the three JSON spec subpaths.
  const oldRoot = await size(
    ['index', 'entries/toolkit', 'entries/snapshot-lifecycle', 'entries/phased-workflow', 'entries/plan-executor'].map((e) => `export * from './src/${e}.ts';`).join('\n'),
  );
  const github = await size(`export * from './src/entries/github.ts';`, ['zod', 'ajv', 'ajv/*', 'fflate']);
  const firstUse = await size(FIRST_USE);
  const conditionRows: BenchRow[] = [];
  for (const [name, target] of [
    ['neutral', { platform: 'neutral' as const }],
    ['worker', { platform: 'neutral' as const, conditions: ['worker'] }],
    ['workerd', { platform: 'neutral' as const, conditions: ['workerd', 'worker'] }],
  ] as const) {
    let figure = 'fails to bundle';
    let met = false;
    try {
      const s = await size(FIRST_USE, [], target);
      figure = `${kb(s.gz)} gzip (${kb(s.min)} min)`;
      met = true;
    } catch {
      // reported as the row's figure
    }
    conditionRows.push({ area: 'package', name: `core + defaultProfile + memoryStorage, esbuild ${name}`, savepoint: figure, baseline: 'failed (node:crypto)', ratio: '—', target: 'bundles', met });
  }
  const cold = coldImportMs();
  const tar = tarball();
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
    {
      area: 'package',
      name: 'core + defaultProfile + memoryStorage, min + gzip, all dependencies',
      savepoint: `${kb(firstUse.gz)} gzip (${kb(firstUse.min)} min)`,
      baseline: '205 KB gzip (issue 18)',
      ratio: (firstUse.gz / (205 * 1024)).toFixed(2),
      target: '<= 60 KB',
      met: firstUse.gz <= 60 * 1024,
    },
    ...conditionRows,
    {
      area: 'package',
      name: "cold import('savepoint') of dist, median of 7 fresh processes",
      savepoint: cold === undefined ? 'no dist (npm run build)' : `${cold.toFixed(0)} ms`,
      baseline: '300–490 ms (issue 18)',
      ratio: cold === undefined ? '—' : (cold / 395).toFixed(2),
      target: '<= 100 ms',
      met: cold !== undefined && cold <= 100,
    },
    {
      area: 'package',
      name: 'tarball packed / unpacked (npm pack --dry-run)',
      savepoint: tar === undefined ? 'no dist (npm run build)' : `${kb(tar.packed)} / ${kb(tar.unpacked)}, ${tar.files} files, ${tar.twice} shipped twice`,
      baseline: '591 KB / 3.3 MB (issue 18)',
      ratio: tar === undefined ? '—' : (tar.packed / (591 * 1024)).toFixed(2),
      target: 'report; no file twice',
      met: tar !== undefined && tar.twice === 0,
    },
    row('core entry, minified + gzip, all dependencies', all, `${Math.round((zod.gz / all.gz) * 100)}% is zod`),
    row('root entry before the per-spec subpaths (root + toolkit + 3 spec entries)', oldRoot, `root now is ${Math.round((all.gz / oldRoot.gz) * 100)}% of it`),
    row("  of which savepoint's own code (incl. precompiled validators)", own),
    row('  zod (chosen dependency, whole z namespace)', zod),
    row('  ajv (run-time compile of custom schemas)', ajv),
    row('savepoint/github, own code', github),
  ];
}
