/**
 * The shape DESIGN.md promises for src/: layers whose imports point one way, no cycle between
 * top folders, no function over 200 lines, no "issue N" history remarks in code.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** DESIGN.md "Layers", bottom first. A folder may import its own layer's folders and those below. */
const LAYERS: readonly (readonly string[])[] = [
  ['contract'],
  ['codec'],
  ['storage'],
  ['snapshot-io'],
  ['writer', 'resume', 'retention', 'runs'],
  ['langgraph', 'profiles'],
  ['entries', 'cli', 'ui', 'testing'],
];
const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));

/** Every .ts file under `dir` (fixtures included: they are code too), node_modules aside. */
function typeScriptFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules') out.push(...typeScriptFiles(path));
    } else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'generated') out.push(...sourceFiles(path));
    } else if (/\.ts$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const topFolder = (file: string): string | undefined => {
  const parts = relative(SRC, file).split('/');
  return parts.length > 1 ? parts[0] : undefined;
};

const files = sourceFiles(SRC);

/** Every (from folder → to folder) import edge, with one example file per edge. */
function folderEdges(): Map<string, string> {
  const edges = new Map<string, string>();
  for (const file of files) {
    const from = topFolder(file);
    if (!from) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
      const to = topFolder(resolve(dirname(file), m[1]!));
      if (to && to !== from && !edges.has(`${from}>${to}`)) edges.set(`${from}>${to}`, relative(SRC, file));
    }
  }
  return edges;
}

describe('src/ structure', () => {
  it('every top folder of src/ has a layer', () => {
    const folders = readdirSync(SRC).filter((n) => statSync(join(SRC, n)).isDirectory());
    expect(folders.filter((f) => !rank.has(f))).toEqual([]);
  });

  it('imports point down the layers: nothing imports from a layer above its own', () => {
    const upward = [...folderEdges()].filter(([edge]) => {
      const [from, to] = edge.split('>') as [string, string];
      return rank.get(to)! > rank.get(from)!;
    });
    expect(upward.map(([edge, file]) => `${edge} (${file})`)).toEqual([]);
  });

  it('no import cycle between top folders', () => {
    const edges = folderEdges();
    const cycles = [...edges.keys()].filter((edge) => {
      const [from, to] = edge.split('>') as [string, string];
      return from < to && edges.has(`${to}>${from}`);
    });
    expect(cycles).toEqual([]);
  });

  it('no function in src/ runs over 200 lines', () => {
    const long: string[] = [];
    for (const file of files) {
      const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const first = sf.getLineAndCharacterOfPosition(node.getStart()).line;
          const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
          if (last - first + 1 > 200) long.push(`${relative(SRC, file)}:${first + 1} (${last - first + 1} lines)`);
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
    expect(long).toEqual([]);
  });

  it('code comments carry no "issue N" history remarks (history lives in git and the CHANGELOG): src, tests, bench, examples', () => {
    const root = resolve(SRC, '..');
    const code = [...files, ...['tests', 'bench', 'examples'].flatMap((dir) => typeScriptFiles(join(root, dir)))];
    const remarks = code.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (/\bissues? #?\d+\b/i.test(line) ? [`${relative(root, file)}:${i + 1}`] : [])),
    );
    expect(remarks).toEqual([]);
  });
});
