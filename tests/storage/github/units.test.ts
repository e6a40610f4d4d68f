import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extract } from '../../../scripts/extract-github-schemas.js';
import { fromBase64, toBase64, asUtf8Text } from '../../../src/codec/base64.js';
import { createScrubber } from '../../../src/storage/github/secrets.js';
import { classifyRateLimit, rateLimitWaitMs } from '../../../src/storage/github/rate-limit.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe('runs everywhere fetch does', () => {
  it('no module reachable from savepoint/github imports a node: module', () => {
    const seen = new Set<string>();
    const offenders: string[] = [];
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      for (const m of source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/g)) {
        const spec = m[1]!;
        if (spec.startsWith('node:') || ['fs', 'path', 'os', 'crypto', 'http', 'https', 'url', 'child_process'].includes(spec))
          offenders.push(`${file}: ${spec}`);
        if (spec.startsWith('.')) {
          // Sources are .ts; generated modules (src/codec/generated) are plain .js.
          const ts = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
          visit(existsSync(ts) ? ts : resolve(dirname(file), spec));
        }
      }
    };
    visit(join(root, 'src/entries/github.ts'));
    expect(seen.size).toBeGreaterThan(10);
    expect(offenders).toEqual([]);
  });
});

describe('base64 without Buffer', () => {
  it('matches Buffer for any bytes, and decodes GitHub’s wrapped base64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 500 }), (bytes) => {
        const b64 = toBase64(bytes);
        expect(b64).toBe(Buffer.from(bytes).toString('base64'));
        const wrapped = b64.replace(/.{60}/g, '$&\n');
        expect(Buffer.from(fromBase64(wrapped)!).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 300 },
    );
    expect(fromBase64('not base64!')).toBeUndefined();
  });

  it('sends valid UTF-8 inline (BOM kept) and binary data as blobs', () => {
    const bom = Uint8Array.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]);
    expect(new TextEncoder().encode(asUtf8Text(bom)!)).toEqual(bom);
    expect(asUtf8Text(Uint8Array.from([0x1f, 0x8b, 0x08, 0xff]))).toBeUndefined();
  });
});

describe('secret scrubbing', () => {
  it('redacts the known token and anything shaped like a GitHub token or an Authorization value', () => {
    const s = createScrubber(['s3cret-token-value']);
    expect(s.scrub('x s3cret-token-value y')).toBe('x [redacted] y');
    expect(s.scrub('ghp_abcdefghijklmnopqrstuvwxyz0123456789')).toBe('[redacted]');
    expect(s.scrub('github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz')).toBe('[redacted]');
    expect(s.scrub('authorization: Bearer abc.def.ghi-123')).toBe('authorization: [redacted]');
    expect(s.scrub('checkpoints/run-1/latest.json does not match deadbeef')).toBe('checkpoints/run-1/latest.json does not match deadbeef');
  });
});

describe('rate-limit rules', () => {
  const h = (o: Record<string, string>): Headers => new Headers(o);
  it('classifies 403/429 the way GitHub documents them', () => {
    expect(classifyRateLimit(403, h({ 'x-ratelimit-remaining': '0' }), 'API rate limit exceeded for user ID 1.')).toBe('primary');
    expect(classifyRateLimit(429, h({ 'x-ratelimit-remaining': '0' }), '')).toBe('primary');
    expect(classifyRateLimit(403, h({ 'x-ratelimit-remaining': '10' }), 'You have exceeded a secondary rate limit.')).toBe('secondary');
    expect(classifyRateLimit(403, h({ 'retry-after': '30' }), '')).toBe('secondary');
    expect(
      classifyRateLimit(403, h({ 'x-ratelimit-remaining': '10' }), 'Resource not accessible by personal access token'),
    ).toBeUndefined();
    expect(classifyRateLimit(404, h({}), 'rate limit')).toBeUndefined();
  });

  it('waits: retry-after wins, then the reset plus 5 s, then at least a minute doubling', () => {
    const now = 1_000_000_000_000;
    expect(rateLimitWaitMs('secondary', h({ 'retry-after': '7' }), now, 3)).toBe(7000);
    expect(rateLimitWaitMs('primary', h({ 'x-ratelimit-reset': String(now / 1000 + 60) }), now, 0)).toBe(65_000);
    expect([0, 1, 2, 3].map((n) => rateLimitWaitMs('secondary', h({}), now, n))).toEqual([60_000, 120_000, 240_000, 480_000]);
  });
});

describe('pinned OpenAPI schemas', () => {
  it('are exactly what scripts/extract-github-schemas.ts extracts from the installed @octokit/openapi', () => {
    const require = createRequire(import.meta.url);
    const pkgPath = require.resolve('@octokit/openapi/package.json');
    const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string };
    const api = JSON.parse(readFileSync(pkgPath.replace(/package\.json$/, 'generated/api.github.com.json'), 'utf8')) as Parameters<
      typeof extract
    >[0];
    const pinned = JSON.parse(readFileSync(join(root, 'src/testing/github-emulator/openapi-schemas.json'), 'utf8')) as unknown;
    expect(pinned).toEqual(extract(api, pkg.version));
  });
});
