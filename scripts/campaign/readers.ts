/**
 * Runs against the readers: `huge-sparse-file` (a sparse file of 1.5 to 4.5 GiB planted as a
 * run's latest, a history entry or its index, read by a reader process that must exit normally,
 * refuse it unread and resume from the newest sound file, in bounded memory; invariant 9) and
 * `surrogate-keys` (keys with lone UTF-16 surrogates on memory and both fs modes: each refused
 * with checkpoint_key_invalid, never aliased with its U+FFFD twin; invariant 6).
 */
import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { fsStorage } from '../../src/entries/fs.js';
import { listAll, memoryStorage, type StorageAdapter } from '../../src/index.js';
import { journalOptions } from './journal-mode.js';
import { budget, describe, profile, record, result, tempDir, writer, type CampaignRun } from './shared.js';

const CHILD = join(fileURLToPath(new URL('.', import.meta.url)), 'reader-child.ts');
const GIB = 1024 * 1024 * 1024;
const SIZES = [1.5 * GIB, 2 * GIB - 1, 2 * GIB, 2.1 * GIB, 4.5 * GIB].map(Math.floor);
const WHERE = ['latest', 'history', 'index'] as const;
/** Peak memory a reader may reach: far below any of the planted sizes. */
const MAX_RSS = 512 * 1024 * 1024;

function runReader(args: readonly string[]): Promise<{ code: number | null; signal: string | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    proc.on('close', (code, signal) => resolve({ code, signal, out, err }));
  });
}

/** Makes `path` a sparse file of `bytes`: ftruncate writes no block. */
async function plantSparse(path: string, bytes: number): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await fh.truncate(bytes);
  } finally {
    await fh.close();
  }
}

/** One trial: a sound run of three snapshots, one file made huge, read by a reader process. */
async function hugeFileTrial(trial: number): Promise<string | undefined> {
  const size = SIZES[trial % SIZES.length]!;
  const where = WHERE[Math.floor(trial / SIZES.length) % WHERE.length]!;
  const mode = trial % 2 === 0 ? undefined : 'journal';
  const tmp = tempDir('huge');
  try {
    const storage = fsStorage({ dir: tmp.dir, ...journalOptions(mode) });
    const w = writer(storage, 'run-h');
    for (let i = 1; i <= 3; i++) await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
    await w.close();
    await storage.close();
    const layout = profile.layout;
    const key =
      where === 'latest'
        ? layout.latestKey('run-h')
        : where === 'index'
          ? layout.indexKey!('run-h')
          : layout.historyKey!({ runId: 'run-h', sequence: 9, id: 'cp_20991231T000000000Z_huge000000', source: 'manual' });
    await plantSparse(join(tmp.dir, key), size);
    const r = await runReader([tmp.dir, 'run-h', key, ...(mode ? [mode] : [])]);
    const label = `${(size / GIB).toFixed(2)} GiB ${where}${mode ? ' (journal)' : ''}`;
    if (r.signal !== null || r.code !== 0) return `${label}: the reader ended with ${r.signal ?? `exit ${r.code}`}: ${r.err.slice(0, 200)}`;
    const got = JSON.parse(r.out) as { sequence?: number; resumeError?: string; skipped?: string[]; get: string; maxRssBytes: number };
    if (got.sequence !== 3) return `${label}: resumed ${got.sequence ?? got.resumeError}, not sequence 3`;
    if (where !== 'index' && !got.skipped?.includes(`checkpoint_too_large ${key}`)) return `${label}: not reported too large`;
    if (got.get !== 'checkpoint_too_large') return `${label}: a plain get answered ${got.get}`;
    if (got.maxRssBytes > MAX_RSS) return `${label}: peak memory ${Math.round(got.maxRssBytes / 1e6)} MB`;
    return undefined;
  } finally {
    tmp.dispose();
  }
}

export const hugeSparseFileRun: CampaignRun = {
  name: 'huge-sparse-file',
  what: 'sparse files of 1.5–4.5 GiB as latest, history or index, read by a reader process: it exits normally, refuses them unread, resumes, in bounded memory',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 4, full: SIZES.length * WHERE.length * 2 }, { quick: 60, full: 300 });
    for (let trial = 0; more(); trial++) {
      try {
        record(r, await hugeFileTrial(trial));
      } catch (err) {
        record(r, `trial ${trial} threw ${describe(err)}`);
      }
    }
    return r;
  },
};

const LONE = ['\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', '\ude00'];

/** A valid key with a lone surrogate put in at `at`, and its twin: the same key with U+FFFD there. */
const lonely = fc
  .tuple(fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 }), fc.constantFrom(...LONE), fc.nat())
  .map(([text, half, at]) => {
    const base = `runs/${text.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const i = 5 + (at % (base.length - 4));
    return { key: `${base.slice(0, i)}${half}${base.slice(i)}`, twin: `${base.slice(0, i)}\ufffd${base.slice(i)}` };
  });

/** One trial on one store: the lone-surrogate key is refused by every call, and its twin keeps its own bytes. */
async function surrogateTrial(storage: StorageAdapter, key: string, twin: string): Promise<string | undefined> {
  await storage.put(twin, new TextEncoder().encode('twin'));
  for (const [what, call] of [
    ['get', () => storage.get(key)],
    ['put', () => storage.put(key, new Uint8Array([1]))],
    ['put ifAbsent', () => storage.put(key, new Uint8Array([1]), { ifAbsent: true })],
    ['delete', () => storage.delete(key)],
    [
      'batch',
      () =>
        storage.batch?.([{ type: 'put', key, bytes: new Uint8Array([1]) }]) ??
        Promise.reject(Object.assign(new Error(), { reasonCode: 'checkpoint_key_invalid' })),
    ],
  ] as const) {
    try {
      await call();
      return `${what} of a lone-surrogate key was accepted`;
    } catch (err) {
      if (describe(err) !== 'checkpoint_key_invalid') return `${what} answered ${describe(err)}`;
    }
  }
  const back = await storage.get(twin);
  if (new TextDecoder().decode(back?.bytes) !== 'twin') return 'the U+FFFD twin lost its bytes';
  const keys = (await listAll(storage, '')).map((e) => e.key);
  if (keys.length !== 1 || keys[0] !== twin) return `list shows ${JSON.stringify(keys)}`;
  await storage.delete(twin);
  return undefined;
}

export const surrogateKeysRun: CampaignRun = {
  name: 'surrogate-keys',
  what: 'keys with a lone UTF-16 surrogate on memory, fs and fs journal: refused by every call, never aliased with their U+FFFD twin',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 150, full: 1500 }, { quick: 30, full: 180 });
    const tmp = tempDir('surrogate');
    const stores: [string, StorageAdapter][] = [
      ['memory', memoryStorage()],
      ['fs', fsStorage({ dir: join(tmp.dir, 'direct') })],
      ['fs journal', fsStorage({ dir: join(tmp.dir, 'journal'), journal: true })],
    ];
    try {
      for (const { key, twin } of fc.sample(lonely, quick ? 150 : 1500)) {
        if (!more()) break;
        for (const [name, storage] of stores) {
          let problem: string | undefined;
          try {
            problem = await surrogateTrial(storage, key, twin);
          } catch (err) {
            problem = `threw ${describe(err)}`;
          }
          record(r, problem === undefined ? undefined : `${name}, key ${JSON.stringify(key)}: ${problem}`);
        }
      }
    } finally {
      for (const [, s] of stores) await s.close();
      tmp.dispose();
    }
    return r;
  },
};
