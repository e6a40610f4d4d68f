// After tsup: the CommonJS declarations (`dist/*.d.cts`) written from the ESM ones (`dist/*.d.ts`).
// The two flavours' declarations are the same text but for their relative imports, which name
// the flavour's own files (`./json-….js` in a .d.ts, `./json-….cjs` in a .d.cts), so that a
// CommonJS app resolves the peers' CommonJS types and an ESM app their ESM ones. Writing them
// here takes milliseconds; a second declaration build in tsup costs as much CPU as the rest of
// the build.
//
//   node scripts/cjs-declarations.mjs [dist]
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';

const dist = process.argv[2] ?? 'dist';
const names = readdirSync(dist).filter((f) => f.endsWith('.d.ts'));
if (names.length === 0) throw new Error(`cjs-declarations: no .d.ts files in ${dist} (run tsup first)`);
const built = new Set(names.map((f) => f.slice(0, -'.d.ts'.length)));

// `from './x.js'`, `import './x.js'` and `import('./x.js')`, for an x this build wrote; examples in
// doc comments name other paths and stay as written.
const RELATIVE = /(\bfrom\s+|\bimport\s*\(?\s*)(['"])\.\/([^'"]+)\.js\2/g;

for (const name of names) {
  const text = readFileSync(join(dist, name), 'utf8');
  const cjs = text.replace(RELATIVE, (whole, before, quote, path) => (built.has(path) ? `${before}${quote}./${path}.cjs${quote}` : whole));
  writeFileSync(join(dist, `${name.slice(0, -'.d.ts'.length)}.d.cts`), cjs);
}
