/**
 * "Small and quick": the bundle size of the first use (a writer with the default
 * profile on the memory store), minified and gzipped with every dependency included, as a
 * browser or edge bundle would ship it; which modules it holds (no zod, no ajv, no other
 * profile's validators); the esbuild neutral / worker / workerd bundles; the cold
 * `import('savepoint')` of the built dist; the tarball. Then the parts, so the figures can be
 * read. Baselines are the issue's figures and the ones measured before this change
 * (b604502: 185.5 KB gzip, 117 ms, 742 KB packed with a file shipped twice).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { BenchRow } from './harness.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Size {
  min: number;
  gz: number;
  /** Modules the bundle holds code of. */
  inputs: string[];
}

async function size(
  contents: string,
  external: string[] = [],
  target: { platform: 'browser' | 'neutral'; conditions?: readonly string[] } = { platform: 'browser' },
): Promise<Size> {
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
    metafile: true,
    logLevel: 'silent',
    external,
  });
  const bytes = r.outputFiles[0]!.contents;
  const output = Object.values(r.metafile.outputs)[0]!;
  const inputs = Object.keys(output.inputs).filter((i) => output.inputs[i]!.bytesInOutput > 0);
  return { min: bytes.length, gz: gzipSync(bytes, { level: 9 }).length, inputs };
}

const kb = (n: number): string => `${(n / 1024).toFixed(1)} KB`;
const holds = (s: Size, pkg: string): boolean => s.inputs.some((i) => i.includes(`node_modules/${pkg}/`));
const validatorsIn = (s: Size): string[] =>
  s.inputs.map((i) => /src\/codec\/generated\/([^/]+)\.js$/.exec(i)?.[1]).filter((m): m is string => m !== undefined);

/** The first use: a writer with the default profile on the memory store (the core entry's figure). */
const FIRST_USE = `import { createWriter, defaultProfile, memoryStorage } from './src/index.ts'; console.log(createWriter, defaultProfile, memoryStorage);`;

/** The core's own documents: the only generated validators the first use may hold. */
const CORE_VALIDATORS = new Set([
  'default-document',
  'run-index',
  'batch-file',
  'preserved-runs',
  'preserved-runs-canonical',
  'retention-log',
  'retention-policy',
  'retention-summary',
]);

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Cold `import('savepoint')` of the built dist, in fresh processes: the median of `runs`, and
 * of the baseline's dist when `SAVEPOINT_BASELINE_DIST` names one (e.g. b604502 built in a
 * scratch directory), interleaved with it run by run; undefined without a build.
 */
function coldImportMs(runs = 7): { ms: number; baselineMs?: number } | undefined {
  const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
  if (!existsSync(dist)) return undefined;
  const baseline = process.env.SAVEPOINT_BASELINE_DIST ? `${process.env.SAVEPOINT_BASELINE_DIST}/index.js` : undefined;
  const time = (file: string): number =>
    Number(
      execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const t = performance.now(); await import(${JSON.stringify(file)}); console.log(performance.now() - t);`,
        ],
        { encoding: 'utf8' },
      ),
    );
  const times: number[] = [];
  const baselineTimes: number[] = [];
  for (let i = 0; i < runs; i++) {
    times.push(time(dist));
    if (baseline) baselineTimes.push(time(baseline));
  }
  return { ms: median(times), ...(baseline ? { baselineMs: median(baselineTimes) } : {}) };
}

/** `npm pack --dry-run` sizes of the built package; undefined without a build. */
function tarball(): { packed: number; unpacked: number; files: number; twice: string[] } | undefined {
  if (!existsSync(fileURLToPath(new URL('../dist/index.js', import.meta.url)))) return undefined;
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [info] = JSON.parse(out) as { size: number; unpackedSize: number; files: { path: string; size: number }[] }[];
  // A file shipped twice: the same content under two paths (a copied chunk, a twin .d.ts / .d.cts).
  const byContent = new Map<string, string[]>();
  for (const f of info!.files) {
    const hash = createHash('sha256')
      .update(readFileSync(`${ROOT}${f.path}`))
      .digest('hex');
    byContent.set(hash, [...(byContent.get(hash) ?? []), f.path]);
  }
  const twice = [...byContent.values()].filter((paths) => paths.length > 1).map((paths) => paths.join(' = '));
  return { packed: info!.size, unpacked: info!.unpackedSize, files: info!.files.length, twice };
}

export async function bench(): Promise<BenchRow[]> {
  const all = await size(`export * from './src/index.ts';`);
  const own = await size(`export * from './src/index.ts';`, ['zod', 'ajv', 'ajv/*', 'fflate']);
  const zod = await size(`import { z } from 'zod'; console.log(z);`);
  const ajv = await size(`import A from 'ajv/dist/2020.js'; console.log(new A());`);
  // What the root entry exported before each spec system got its own subpath:
  // today's root plus the toolkit and the three JSON spec subpaths.
  const oldRoot = await size(
    ['index', 'entries/toolkit', 'entries/snapshot-lifecycle', 'entries/phased-workflow', 'entries/plan-executor']
      .map((e) => `export * from './src/${e}.ts';`)
      .join('\n'),
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
    conditionRows.push({
      area: 'package',
      name: `core + defaultProfile + memoryStorage, esbuild ${name}`,
      savepoint: figure,
      baseline: 'bundled, 185.5 KB gzip (b604502)',
      ratio: '—',
      target: 'bundles',
      met,
    });
  }
  const cold = coldImportMs();
  const tar = tarball();
  const row = (name: string, s: Size, note = '—'): BenchRow => ({
    area: 'package',
    name,
    savepoint: `${kb(s.gz)} gzip (${kb(s.min)} min)`,
    baseline: '—',
    ratio: note,
    target: 'report',
    met: true,
  });
  const foreign = validatorsIn(firstUse).filter((m) => !CORE_VALIDATORS.has(m));
  const deps = (s: Size): string => ['zod', 'ajv', 'fflate'].filter((p) => holds(s, p)).join(', ') || 'none';
  return [
    {
      area: 'package',
      name: 'core + defaultProfile + memoryStorage, min + gzip, all dependencies',
      savepoint: `${kb(firstUse.gz)} gzip (${kb(firstUse.min)} min)`,
      baseline: '185.5 KB gzip (b604502); 205 KB',
      ratio: (firstUse.gz / (185.5 * 1024)).toFixed(2),
      target: '<= 60 KB',
      met: firstUse.gz <= 60 * 1024,
    },
    {
      area: 'package',
      name: '  what it holds: dependencies; generated validators',
      savepoint: `${deps(firstUse)}; ${validatorsIn(firstUse).join(', ')}`,
      baseline: 'zod, ajv, fflate; all 15 (b604502)',
      ratio: '—',
      target: 'no zod, no ajv, no other profile’s validators',
      met: !holds(firstUse, 'zod') && !holds(firstUse, 'ajv') && foreign.length === 0,
    },
    ...conditionRows,
    {
      area: 'package',
      name: "cold import('savepoint') of dist, median of 7 fresh processes",
      savepoint: cold === undefined ? 'no dist (npm run build)' : `${cold.ms.toFixed(0)} ms`,
      baseline: cold?.baselineMs !== undefined ? `${cold.baselineMs.toFixed(0)} ms (b604502, interleaved)` : '117 ms (b604502); 300–490 ms',
      ratio: cold === undefined ? '—' : (cold.ms / (cold.baselineMs ?? 117)).toFixed(2),
      // On a loaded machine the absolute time says little: the ratio to the interleaved baseline, times its 117 ms quiet figure, is the estimate.
      target: '<= 100 ms (quiet machine)',
      met: cold !== undefined && (cold.baselineMs !== undefined ? (cold.ms / cold.baselineMs) * 117 : cold.ms) <= 100,
    },
    {
      area: 'package',
      name: 'tarball packed / unpacked (npm pack --dry-run)',
      savepoint:
        tar === undefined
          ? 'no dist (npm run build)'
          : `${kb(tar.packed)} / ${kb(tar.unpacked)}, ${tar.files} files, ${tar.twice.length} shipped twice${tar.twice.length ? ` (${tar.twice.join('; ')})` : ''}`,
      baseline: '742 KB / 3.9 MB, 1 twice (b604502); 591 KB / 3.3 MB',
      ratio: tar === undefined ? '—' : (tar.packed / (742 * 1024)).toFixed(2),
      target: 'report; no file twice',
      met: tar !== undefined && tar.twice.length === 0,
    },
    row('core entry (every root export), minified + gzip, all dependencies', all, `dependencies in it: ${deps(all)}`),
    row(
      'root entry before the per-spec subpaths (root + toolkit + 3 spec entries)',
      oldRoot,
      `root now is ${Math.round((all.gz / oldRoot.gz) * 100)}% of it`,
    ),
    row("  of which savepoint's own code (incl. precompiled validators)", own),
    row('zod, whole z namespace (toolkit schemas and spec subpaths only)', zod),
    row('ajv (custom schemas compiled at run time; toolkit only)', ajv),
    row('savepoint/github, own code', github),
  ];
}
