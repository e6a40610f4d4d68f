/**
 * What a program loads: the first use of savepoint — a writer with the default
 * profile on the memory store, resumed — bundles without zod, without ajv and without any
 * other profile's validators; and each built-in profile's subpath loads its own validators
 * only. Read from esbuild's metafile (the modules a bundle holds), not timed. The size and
 * cold-import figures are in bench/package.bench.ts.
 */
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { scratchFolder } from '../support/scratch.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = scratchFolder('loads');

const FIRST_USE = `
  import { createWriter, defaultProfile, memoryStorage, planResume, runRetention } from './src/index.ts';
  console.log(createWriter, defaultProfile, memoryStorage, planResume, runRetention);
`;

/** The generated validator modules of the core's own documents (src/codec/generated/<name>.js). */
const CORE_VALIDATORS = [
  'default-document',
  'run-index',
  'batch-file',
  'preserved-runs',
  'preserved-runs-canonical',
  'retention-log',
  'retention-policy',
  'retention-summary',
];

const generatedModule = (input: string): string | undefined => /src\/codec\/generated\/([^/]+)\.js$/.exec(input)?.[1];

/** Inputs of the bundle's entry chunk and of every chunk it imports statically: what `import` loads before any dynamic import. */
function staticallyLoaded(metafile: Metafile): string[] {
  const outputs = metafile.outputs;
  const entry = Object.keys(outputs).find((o) => outputs[o]!.entryPoint === '<stdin>')!;
  const seen = new Set<string>();
  const visit = (o: string): void => {
    if (seen.has(o)) return;
    seen.add(o);
    for (const i of outputs[o]!.imports) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  visit(entry);
  return [...seen].flatMap((o) => inputsOf(outputs[o]!));
}

/** The modules an output holds code of (the metafile also lists modules parsed and then shaken out entirely). */
const inputsOf = (output: Metafile['outputs'][string]): string[] =>
  Object.keys(output.inputs).filter((i) => output.inputs[i]!.bytesInOutput > 0);

async function bundle(contents: string, splitting: boolean, platform: 'browser' | 'node' = 'browser'): Promise<Metafile> {
  const r = await build({
    stdin: { contents, resolveDir: ROOT, loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform,
    ...(platform === 'browser' ? { mainFields: ['module', 'main'] } : {}),
    define: { __SAVEPOINT_VERSION__: '"0.0.0"' },
    metafile: true,
    write: false,
    logLevel: 'silent',
    ...(splitting ? { splitting: true, outdir: dir } : {}),
  });
  return r.metafile;
}

describe('what a program loads', () => {
  it('the first use bundles neither zod nor ajv nor another profile’s validators', async () => {
    const inputs = inputsOf(Object.values((await bundle(FIRST_USE, false)).outputs)[0]!);
    expect(inputs.filter((i) => /node_modules\/(zod|ajv|fast-uri|json-schema-traverse|fast-deep-equal)\//.test(i))).toEqual([]);
    const validators = inputs.map(generatedModule).filter((m) => m !== undefined);
    expect(validators.filter((m) => !CORE_VALIDATORS.includes(m))).toEqual([]);
    expect(validators).toContain('default-document');
  });

  it.each([
    [
      'handoff-markdown',
      ['handoff-handoff-document-json-schema', 'handoff-stored-handoff-json-schema', 'handoff-legacy-stored-handoff-json-schema'],
    ],
    ['progress-protocol', ['progress-progress-document-json-schema', 'progress-stored-progress-json-schema']],
    ['plan-executor', ['plan-executor-document']],
    ['langgraph', ['langgraph-document']],
    ['snapshot-lifecycle', []],
    ['phased-workflow', []],
  ])('savepoint/%s loads its own validators only, and never all of them', async (entry, own) => {
    const loaded = staticallyLoaded(await bundle(`export * from './src/entries/${entry}.ts';`, true, 'node'));
    const validators = [...new Set(loaded.map(generatedModule).filter((m) => m !== undefined))];
    // loaders.js maps each schema to a dynamic import of its module (the JSON profiles load theirs on first use).
    expect(validators.filter((m) => !CORE_VALIDATORS.includes(m) && !own.includes(m) && m !== 'loaders').sort()).toEqual([]);
    expect(loaded.some((i) => /node_modules\/ajv\//.test(i))).toBe(false);
  });

  it('savepoint/langgraph loads its document validator with the subpath, so a replica’s first read does not wait for it', async () => {
    const loaded = staticallyLoaded(await bundle(`export * from './src/entries/langgraph.ts';`, true, 'node'));
    expect(loaded.map(generatedModule)).toContain('langgraph-document');
  });
});
