/**
 * Pins the few GitHub REST schemas the GitHub emulator validates against.
 *
 * Reads GitHub's official OpenAPI description from `@octokit/openapi` (a dev
 * dependency), keeps only the operations `githubStorage` uses and the component schemas
 * they reference, converts OpenAPI 3.0 dialect (`nullable`, `discriminator`, examples)
 * to plain JSON Schema that ajv compiles in strict mode, and writes
 * `src/testing/github-emulator/openapi-schemas.json` with the source version noted.
 *
 * The emulator ships with the package, so the pinned file lives next to it and is read
 * at runtime; this script only runs when someone wants to re-pin:
 *
 *   npx tsx scripts/extract-github-schemas.ts          # rewrite the file
 *   npx tsx scripts/extract-github-schemas.ts --check  # exit 1 if the file is stale
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The operations githubStorage calls; their request and response schemas are pinned. */
export const PINNED_OPERATIONS = [
  'repos/get-content',
  'repos/create-or-update-file-contents',
  'repos/delete-file',
  'repos/get-commit',
  'repos/compare-commits-with-basehead',
  'git/create-blob',
  'git/get-blob',
  'git/create-tree',
  'git/get-tree',
  'git/create-commit',
  'git/get-ref',
  'git/update-ref',
] as const;

/** Error bodies GitHub sends on statuses an operation does not declare (403/429 rate limits, 5xx). */
const EXTRA_SCHEMAS = ['basic-error', 'validation-error'];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

// Annotations ajv does not need; dropping them keeps the pinned file small and strict-mode clean.
const DROPPED_KEYWORDS = new Set(['description', 'example', 'examples', 'discriminator', 'externalDocs', 'xml', 'title']);

/** Converts one OpenAPI 3.0 schema node to JSON Schema (draft 7), collecting referenced component names. */
function convert(node: Json, refs: Set<string>): Json {
  if (Array.isArray(node)) return node.map((n) => convert(n, refs));
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED_KEYWORDS.has(key) || key.startsWith('x-')) continue;
    if (key === 'nullable') continue;
    if (key === '$ref' && typeof value === 'string') {
      const name = value.replace('#/components/schemas/', '');
      refs.add(name);
      out.$ref = `#/definitions/${name}`;
      continue;
    }
    if (key === 'oneOf') {
      // GitHub's description uses oneOf loosely: its alternatives overlap (a plain error body
      // is both a basic-error and a repository-rule-violation-error), so real answers would
      // fail "exactly one". anyOf keeps every alternative's checks.
      out.anyOf = convert(value, refs);
      continue;
    }
    if (key === 'properties' && isObject(value)) {
      // Property names are data, not keywords: convert each value, keep every name.
      out.properties = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, convert(schema, refs)]));
      continue;
    }
    out[key] = convert(value, refs);
  }
  if (node.nullable === true) {
    if (typeof out.type === 'string' && out.$ref === undefined && out.anyOf === undefined && out.allOf === undefined) {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
    } else {
      return { anyOf: [out, { type: 'null' }] };
    }
  }
  return out;
}

interface OpenApi {
  info: { version: string };
  openapi: string;
  paths: Record<string, Record<string, JsonObject>>;
  components: { schemas: Record<string, Json>; responses: Record<string, JsonObject> };
}

/** Builds the pinned document from the OpenAPI description. */
export function extract(api: OpenApi, packageVersion: string): JsonObject {
  const refs = new Set<string>(EXTRA_SCHEMAS);
  const operations: JsonObject = {};
  const byId = new Map<string, { method: string; path: string; op: JsonObject }>();
  for (const [path, item] of Object.entries(api.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (isObject(op) && typeof op.operationId === 'string') byId.set(op.operationId, { method: method.toUpperCase(), path, op });
    }
  }
  for (const id of PINNED_OPERATIONS) {
    const found = byId.get(id);
    if (!found) throw new Error(`operation ${id} is not in the OpenAPI description`);
    const { op } = found;
    const entry: JsonObject = { method: found.method, path: found.path };
    const body = isObject(op.requestBody) && isObject(op.requestBody.content) ? op.requestBody.content['application/json'] : undefined;
    if (isObject(body) && body.schema !== undefined) entry.request = convert(body.schema, refs);
    const responses: JsonObject = {};
    for (const [status, raw] of Object.entries(isObject(op.responses) ? op.responses : {})) {
      let response = raw;
      if (isObject(response) && typeof response.$ref === 'string')
        response = api.components.responses[response.$ref.replace('#/components/responses/', '')] ?? null;
      if (!isObject(response) || !isObject(response.content)) {
        responses[status] = null; // a declared status without a body (204, 304)
        continue;
      }
      const media: JsonObject = {};
      for (const [type, content] of Object.entries(response.content)) {
        if (isObject(content) && content.schema !== undefined) media[type] = convert(content.schema, refs);
      }
      responses[status] = media;
    }
    entry.responses = responses;
    operations[id] = entry;
  }
  const definitions: JsonObject = {};
  const pending = [...refs];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (definitions[name] !== undefined) continue;
    const schema = api.components.schemas[name];
    if (schema === undefined) throw new Error(`schema ${name} is referenced but not defined`);
    const found = new Set<string>();
    definitions[name] = convert(schema, found);
    for (const r of found) if (definitions[r] === undefined) pending.push(r);
  }
  const sorted = Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    source: {
      package: '@octokit/openapi',
      version: packageVersion,
      file: 'generated/api.github.com.json',
      openapi: api.openapi,
      apiVersion: api.info.version,
      note: "Generated by scripts/extract-github-schemas.ts: OpenAPI 3.0 nullable converted to null types, discriminators and annotations dropped, oneOf read as anyOf (GitHub's alternatives overlap). JSON Schema draft 7. Do not edit by hand.",
    },
    operations,
    definitions: sorted,
  };
}

function main(): void {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('@octokit/openapi/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string };
  const api = JSON.parse(readFileSync(pkgPath.replace(/package\.json$/, 'generated/api.github.com.json'), 'utf8')) as OpenApi;
  const target = fileURLToPath(new URL('../src/testing/github-emulator/openapi-schemas.json', import.meta.url));
  const text = `${JSON.stringify(extract(api, pkg.version), null, 1)}\n`;
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(target, 'utf8');
    } catch {
      // missing counts as stale
    }
    if (current !== text) {
      console.error(`${target} is stale: run npx tsx scripts/extract-github-schemas.ts`);
      process.exit(1);
    }
    console.log(`${target} matches @octokit/openapi ${pkg.version}`);
    return;
  }
  writeFileSync(target, text);
  console.log(`wrote ${target} from @octokit/openapi ${pkg.version} (${PINNED_OPERATIONS.length} operations)`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
