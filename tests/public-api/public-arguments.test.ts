import { describe, expect, it } from 'vitest';
import { assertRunId, buildInventory, decodeStoredSnapshot, gunzip, gzip, readSnapshot } from 'savepoint/toolkit';
import { appendRetentionLog, readRetentionLog } from '../../src/retention/log.js';
import { collectRunFiles } from '../../src/snapshot-io/run-files.js';
import { locateNewestSnapshot } from '../../src/resume/locate.js';
import {
  applyRetention,
  cleanupAfterRunCompletion,
  createWriter,
  defaultProfile,
  findIncompleteRuns,
  isCheckpointError,
  memoryStorage,
  planResume,
  preserveRun,
  runRetention,
  sweepChunks,
  unpreserveRun,
} from 'savepoint';
import { crc32, isGzip } from '../../src/codec/gzip.js';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { parseHandoff } from 'savepoint/handoff-markdown';

// Every public entry validates its arguments and answers with a CheckpointError, never a
// raw TypeError (planResume, findIncompleteRuns and runRetention threw one without a
// profile; memoryStorage.put stored a string), and refuses reserved names as run ids.

/** What calling `fn` does: the reason code it throws or rejects with, `raw <name>` for anything else, `ok` when it returns. */
async function outcome(fn: () => unknown): Promise<string> {
  try {
    await fn();
    return 'ok';
  } catch (err) {
    return isCheckpointError(err) ? err.reasonCode : `raw ${err instanceof Error ? err.name : typeof err}`;
  }
}

const storage = memoryStorage();
const profile = defaultProfile;
const BAD: readonly [string, unknown][] = [
  ['undefined', undefined],
  ['null', null],
  ['a string', 'x'],
  ['a number', 42],
  ['an empty object', {}],
];

/** Entries taking one options object `{ storage, profile, … }`, with valid extra options. */
const OPTION_ENTRIES: readonly [string, (options: unknown) => unknown, Record<string, unknown>][] = [
  ['planResume', (o) => planResume(o as never), { runId: 'run-a' }],
  ['locateNewestSnapshot', (o) => locateNewestSnapshot(o as never), { runId: 'run-a' }],
  ['findIncompleteRuns', (o) => findIncompleteRuns(o as never), {}],
  ['runRetention', (o) => runRetention(o as never), { dryRun: true }],
  ['cleanupAfterRunCompletion', (o) => cleanupAfterRunCompletion(o as never), { runId: 'run-a' }],
  ['buildInventory', (o) => buildInventory(o as never), {}],
  ['applyRetention', (o) => applyRetention(o as never), { plan: { profile: defaultProfile.name, operations: [] }, dryRun: true }],
  ['preserveRun', (o) => preserveRun(o as never), { runId: 'run-a' }],
  ['unpreserveRun', (o) => unpreserveRun(o as never), { runId: 'run-a' }],
];

const PROFILE_OPTIONAL = new Set(['planResume', 'findIncompleteRuns']);

describe('public entries answer bad arguments with a CheckpointError', () => {
  it('sweepChunks: a missing or bad storage, a bad options object or grace period', async () => {
    for (const [what, value] of BAD)
      expect(await outcome(() => sweepChunks(value as never)), `sweepChunks(${what})`).toBe('checkpoint_config_invalid');
    expect(await outcome(() => sweepChunks(storage, 'x' as never))).toBe('checkpoint_config_invalid');
    expect(await outcome(() => sweepChunks(storage, { graceMs: -1 }))).toBe('checkpoint_config_invalid');
    expect(await outcome(() => sweepChunks(storage))).toBe('ok');
  });

  for (const [name, call, extra] of OPTION_ENTRIES) {
    it(`${name}: a bad options object, a missing or bad profile, a missing or bad storage`, async () => {
      for (const [what, value] of BAD) expect(await outcome(() => call(value)), `${name}(${what})`).toBe('checkpoint_config_invalid');
      for (const [what, value] of BAD) {
        // planResume and findIncompleteRuns read with defaultProfile when given none, as createWriter writes.
        if (value === undefined && PROFILE_OPTIONAL.has(name)) continue;
        expect(await outcome(() => call({ storage, profile: value, ...extra })), `${name} with profile ${what}`).toBe(
          'checkpoint_config_invalid',
        );
      }
      for (const [what, value] of BAD)
        expect(await outcome(() => call({ storage: value, profile, ...extra })), `${name} with storage ${what}`).toBe(
          'checkpoint_config_invalid',
        );
      // The same call with real arguments does not fail on its arguments.
      const good = await outcome(() => call({ storage, profile, ...extra }));
      expect(['ok', 'checkpoint_not_found'], `${name} with good arguments`).toContain(good);
    });
  }

  it('entries with a run id refuse a bad one with checkpoint_key_invalid', async () => {
    for (const [name, call, extra] of OPTION_ENTRIES) {
      if (!('runId' in extra)) continue;
      // unpreserveRun takes any string: a hand-written file may list an id the profile refuses.
      for (const runId of name === 'unpreserveRun' ? [undefined, 42] : [undefined, 42, '../x', '', 'a/b'])
        expect(await outcome(() => call({ storage, profile, ...extra, runId })), `${name}(runId ${String(runId)})`).toBe(
          'checkpoint_key_invalid',
        );
    }
  });

  it('positional entries: readSnapshot, decodeStoredSnapshot, collectRunFiles, readRetentionLog, appendRetentionLog', async () => {
    const entries: readonly [string, (bad: unknown) => unknown][] = [
      ['readSnapshot storage', (b) => readSnapshot(b as never, profile, 'checkpoints/run-a/latest.json')],
      ['readSnapshot profile', (b) => readSnapshot(storage, b as never, 'checkpoints/run-a/latest.json')],
      ['readSnapshot key', (b) => readSnapshot(storage, profile, b as never)],
      ['decodeStoredSnapshot storage', (b) => decodeStoredSnapshot(b as never, profile, 'k.json', new Uint8Array(2))],
      ['decodeStoredSnapshot profile', (b) => decodeStoredSnapshot(storage, b as never, 'k.json', new Uint8Array(2))],
      ['decodeStoredSnapshot bytes', (b) => decodeStoredSnapshot(storage, profile, 'k.json', b as never)],
      ['collectRunFiles storage', (b) => collectRunFiles(b as never, profile as never)],
      ['collectRunFiles profile', (b) => collectRunFiles(storage, b as never)],
      ['readRetentionLog storage', (b) => readRetentionLog(b as never, 'checkpoints/retention_log.json')],
      ['readRetentionLog key', (b) => readRetentionLog(storage, b as never)],
      ['appendRetentionLog entry', (b) => appendRetentionLog(storage, 'checkpoints/retention_log.json', b as never)],
    ];
    for (const [name, call] of entries) {
      for (const [what, value] of BAD) {
        if (what === 'a string' && name.endsWith('key')) continue; // a string is a key
        if (what === 'an empty object' && name.endsWith('entry')) continue; // an object is an entry; its fields are checked when the log is read
        expect(await outcome(() => call(value)), `${name} = ${what}`).toBe('checkpoint_config_invalid');
      }
    }
  });

  it('gzip, gunzip and crc32 refuse what is not bytes; isGzip says false', async () => {
    for (const [what, value] of BAD) {
      for (const [name, call] of [
        ['gzip', () => gzip(value as never)],
        ['gunzip', () => gunzip(value as never)],
        ['crc32', () => crc32(value as never)],
      ] as const) {
        expect(await outcome(call), `${name}(${what})`).toBe('checkpoint_config_invalid');
      }
      expect(isGzip(value as never)).toBe(false);
    }
  });

  it('memoryStorage.put refuses a string instead of storing it; memoryStorage refuses bad options', async () => {
    const s = memoryStorage();
    expect(await outcome(() => s.put('a/b.json', 'text' as never))).toBe('checkpoint_config_invalid');
    expect(await outcome(() => s.put('a/b.json', [1, 2] as never))).toBe('checkpoint_config_invalid');
    expect(await s.get('a/b.json')).toBeUndefined();
    expect(await outcome(() => memoryStorage(null as never))).toBe('checkpoint_config_invalid');
    expect(await outcome(() => memoryStorage({ maxValueBytes: -1 }))).toBe('checkpoint_config_invalid');
    expect(await outcome(() => memoryStorage({ maxValueBytes: 'big' as never }))).toBe('checkpoint_config_invalid');
  });

  it('parseHandoff: a YAML alias bomb and an alias to nowhere are checkpoint_schema_invalid, not a ReferenceError', async () => {
    const body = '\n## Current State\nx\n';
    const bomb = [
      '---',
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
      'checkpoint: 1',
      'created: 2025-01-01T00:00:00Z',
      '---',
    ].join('\n');
    expect(await outcome(() => parseHandoff(bomb + body))).toBe('checkpoint_schema_invalid');
    expect(await outcome(() => parseHandoff(['---', 'a: *nowhere', '---'].join('\n') + body))).toBe('checkpoint_schema_invalid');
    expect(await outcome(() => parseHandoff(42 as never))).toBe('checkpoint_schema_invalid');
  });
});

describe('reserved names are not run ids', () => {
  const reserved = ['preserved_runs.json', 'retention_log.json', 'Preserved_Runs.JSON', 'RETENTION_LOG.json'];

  it('assertRunId and every profile refuse them with checkpoint_key_invalid', async () => {
    for (const runId of reserved) {
      expect(await outcome(() => assertRunId(runId)), runId).toBe('checkpoint_key_invalid');
      for (const p of [defaultProfile, phasedWorkflow])
        expect(await outcome(() => p.assertRunId(runId)), `${p.name} ${runId}`).toBe('checkpoint_key_invalid');
    }
    expect(await outcome(() => assertRunId('preserved_runs.json.bak'))).toBe('ok');
  });

  it('a writer, planResume and preserveRun refuse them; prunes keep working', async () => {
    const s = memoryStorage();
    for (const runId of reserved) {
      expect(await outcome(() => createWriter({ storage: s, profile, runId })), `createWriter ${runId}`).toBe('checkpoint_key_invalid');
      expect(await outcome(() => planResume({ storage: s, profile, runId })), `planResume ${runId}`).toBe('checkpoint_key_invalid');
      expect(await outcome(() => preserveRun({ storage: s, profile, runId })), `preserveRun ${runId}`).toBe('checkpoint_key_invalid');
    }
    const w = createWriter({ storage: s, profile, runId: 'run-a' });
    expect((await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { a: 1 } })).ok).toBe(true);
    await w.close();
    await preserveRun({ storage: s, profile, runId: 'run-a' });
    expect((await runRetention({ storage: s, profile })).report.status).toBe('completed');
  });
});
