import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson } from '../../codec/canonical-json.js';
import type { ForeignReadWarning } from '../../contract/document-format.js';
import { utf8Decode } from '../../codec/utf8.js';
import { isCheckpointError, type CheckpointError } from '../../contract/errors.js';
import { decodeRunIndex } from '../../codec/run-index.js';
import { decodeBatchFile } from '../../snapshot-io/batch-file.js';
import { GZIP_SUFFIX } from '../../contract/layout.js';
import { indexPathResolver } from '../../resume/locate.js';
import { collectRunFiles, type ClassifiedEntry, type RunFiles } from '../../snapshot-io/run-files.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT, printJson, table } from '../io.js';
import { mapLimit } from '../../storage/map-limit.js';
import { duplicateSequences } from '../../runs/duplicate-sequences.js';
import { loadEntry } from '../../runs/inspect.js';
import { progressBar } from '../progress.js';
import { auditChunks } from '../../snapshot-io/chunk-refs.js';
import { chunkKey } from '../../codec/chunking.js';
import { identityIssue, refusalIssue } from '../../snapshot-io/refusal.js';
import { assertRunsExist, profileHint, storeLabel } from '../probe.js';

/** A problem or warning found by `verify`. */
interface Finding {
  readonly key: string;
  readonly level: 'problem' | 'warning';
  readonly reasonCode: string;
  readonly message: string;
}

/** A file's refusal, in the words resume uses for the same file ({@link refusalIssue}). */
const finding = (key: string, err: CheckpointError, level: Finding['level'] = 'problem'): Finding => ({
  key,
  level,
  reasonCode: err.reasonCode,
  message: refusalIssue(err, key),
});

async function checkJsonFile(ctx: CommandContext, entry: ClassifiedEntry): Promise<Finding[]> {
  try {
    const stored = await ctx.storage.get(entry.key);
    if (stored) parseJson(utf8Decode(stored.bytes, entry.key), entry.key);
    return [];
  } catch (err) {
    if (isCheckpointError(err)) return [finding(entry.key, err)];
    throw err;
  }
}

/** `verify`'s words for a file read tolerantly: unsealed, not corrupt (`savepoint import --apply` seals it). */
const UNSEALED_MESSAGES: Readonly<Record<ForeignReadWarning, string>> = {
  checkpoint_unsealed: 'unsealed: written by another tool, valid under the spec; `savepoint import --apply` seals it',
  checkpoint_foreign_seal: "unsealed: another tool's checksum scheme, valid under the spec; `savepoint import --apply` seals it",
  checkpoint_integrity_mismatch: 'edited after savepoint sealed it, valid under the spec; resume reads the edited file',
  checkpoint_time_without_offset: 'a time without an offset, read as UTC',
  checkpoint_sequence_derived: "no sequence (the spec has none): numbered by the run's order of time",
};

/** What a non-file at a path is, for the message. */
function describeNonFile(stats: { isDirectory(): boolean; isSymbolicLink(): boolean }): string {
  return stats.isSymbolicLink() ? 'a symbolic link' : stats.isDirectory() ? 'a directory' : 'not a regular file';
}

/**
 * Checks a run's fixed files (latest, index, lock) where they must be, whatever the
 * listing showed: a listing skips what is not a regular file, so a directory or a
 * symbolic link in place of `latest.json` was invisible although every write is refused.
 * Each is read through the store (an error is a problem with its reason code); on a
 * directory store the path itself is looked at too (an empty directory reads as absent).
 */
async function checkFixedFiles(ctx: CommandContext, runId: string): Promise<Finding[]> {
  const layout = ctx.profile.layout;
  const slots: { key: string; what: string; level: Finding['level'] }[] = [
    { key: layout.latestKey(runId), what: 'latest', level: 'problem' },
    ...(layout.indexKey ? [{ key: layout.indexKey(runId), what: 'index', level: 'problem' as const }] : []),
    // An unreadable lock only costs resume a scan, but a writer may not be able to take the run over.
    { key: layout.lockKey(runId), what: 'lock', level: 'warning' },
  ];
  const findings: Finding[] = [];
  const dir = fsRoot(ctx);
  for (const { key, what, level } of slots) {
    try {
      await ctx.storage.get(key);
    } catch (err) {
      if (!isCheckpointError(err)) throw err;
      findings.push({ ...finding(key, err, level), message: `${what}: ${err.message}` });
      continue;
    }
    if (dir === undefined) continue;
    const stats = await lstat(join(dir, key)).catch(() => undefined);
    if (stats && !stats.isFile()) {
      findings.push({
        key,
        level,
        reasonCode: 'checkpoint_key_invalid',
        message: `${what} is ${describeNonFile(stats)}, not a file: the store refuses to read or replace it`,
      });
    }
  }
  return findings;
}

/** The directory of a file-system store, where paths can be looked at directly; `undefined` for other stores. */
function fsRoot(ctx: CommandContext): string | undefined {
  if (ctx.storage.name !== 'fs' || typeof ctx.values.github === 'string') return undefined;
  return typeof ctx.values.dir === 'string' ? ctx.values.dir : '.';
}

/**
 * Runs a listing cannot see: folders under the layout's runs root whose only entries are not
 * regular files (a symbolic link as `latest.json`, which the store refuses to follow). Each is
 * reported through its fixed files rather than silently left out.
 */
async function unlistedRuns(ctx: CommandContext, listed: ReadonlySet<string>, named: readonly string[]): Promise<string[]> {
  const dir = fsRoot(ctx);
  if (dir === undefined) return [];
  if (named.length > 0) return named.filter((r) => !listed.has(r));
  const root = join(dir, ctx.profile.layout.runsPrefix);
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isDirectory() && !listed.has(e.name))
    .map((e) => e.name)
    .filter((name) => {
      try {
        ctx.profile.assertRunId(name);
        return true;
      } catch {
        return false;
      }
    });
}

/** One `verify` in progress: what it found and how many files it has checked and decoded. */
interface VerifyState {
  readonly ctx: CommandContext;
  readonly findings: Finding[];
  readonly bar: { tick(): void; done(): void };
  checked: number;
  decoded: number;
}

function tick(state: VerifyState): void {
  state.checked++;
  state.bar.tick();
}

/** Checks one run's files: its fixed files, every snapshot file, batch files, the index, and latest against its history. */
async function verifyRun(state: VerifyState, run: RunFiles): Promise<void> {
  const { ctx, findings } = state;
  findings.push(...(await checkFixedFiles(ctx, run.runId)));
  const singles = [...(run.latest ? [run.latest] : []), ...run.history];
  const rows = await mapLimit(singles, 8, async (e) => {
    const row = await loadEntry(ctx.storage, ctx.profile, e);
    tick(state);
    return row;
  });
  for (const row of rows) if (row.error) findings.push(finding(row.key, row.error));
  // Written (or, for a single-artifact format, edited) by another tool: readable, only not sealed by savepoint.
  for (const row of rows)
    for (const code of row.readWarnings ?? [])
      findings.push({ key: row.key, level: 'warning', reasonCode: code, message: UNSEALED_MESSAGES[code] });
  state.decoded += rows.filter((r) => r.snapshot).length;
  /** The checksum of each sequence history and batch files hold. */
  const sequences = new Map<number, string>();
  for (const row of rows.slice(run.latest ? 1 : 0)) if (row.snapshot) sequences.set(row.snapshot.sequence, row.snapshot.integrity.checksum);
  // A history file and its `.gz` twin (a prune cut short while compressing) are one document.
  const historyDocuments = new Map<string, number>();
  for (const row of rows.slice(run.latest ? 1 : 0))
    if (row.snapshot)
      historyDocuments.set(row.key.endsWith(GZIP_SUFFIX) ? row.key.slice(0, -GZIP_SUFFIX.length) : row.key, row.snapshot.sequence);
  for (const duplicate of duplicateSequences([...historyDocuments].map(([key, sequence]) => ({ key, sequence })))) {
    findings.push({
      key: duplicate.keys[0]!,
      level: 'problem',
      reasonCode: 'checkpoint_conflict',
      message: `sequence ${duplicate.sequence} is held by ${duplicate.keys.length} documents (${duplicate.keys.join(', ')}): two writers counted for themselves`,
    });
  }
  for (const batch of run.batches) await checkBatch(state, batch, sequences);
  if (run.index) await checkIndex(state, run, run.index);
  const latest = rows[0]?.snapshot && run.latest ? rows[0].snapshot : undefined;
  if (latest && sequences.size > 0) checkLatestAgainstHistory(findings, run.latest!.key, latest, sequences);
}

async function checkBatch(state: VerifyState, batch: ClassifiedEntry, sequences: Map<number, string>): Promise<void> {
  const { ctx, findings } = state;
  try {
    const stored = await ctx.storage.get(batch.key);
    const members = stored ? await decodeBatchFile(ctx.storage, ctx.profile, batch.key, stored.bytes) : [];
    for (const [position, m] of members.entries()) {
      const key = `${batch.key}#${position}`;
      const issue = m.ok && batch.info.runId !== undefined ? identityIssue(m.snapshot, batch.info.runId, key, batch.info) : undefined;
      if (!m.ok) findings.push(finding(key, m.error));
      else if (issue !== undefined) findings.push({ key, level: 'problem', reasonCode: 'checkpoint_schema_invalid', message: issue });
      else sequences.set(m.snapshot.sequence, m.snapshot.integrity.checksum);
    }
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    findings.push(finding(batch.key, err));
  }
  tick(state);
}

/** Every index entry must point at a history or batch file of the run. */
async function checkIndex(state: VerifyState, run: RunFiles, indexEntry: ClassifiedEntry): Promise<void> {
  const { ctx, findings } = state;
  try {
    const stored = await ctx.storage.get(indexEntry.key);
    const index = stored ? decodeRunIndex(stored.bytes, indexEntry.key) : undefined;
    if (index && index.run_id !== run.runId) {
      // A copied run folder: every entry points into the old run's folder; one finding says why.
      findings.push({
        key: indexEntry.key,
        level: 'problem',
        reasonCode: 'checkpoint_schema_invalid',
        message: `the index names run "${index.run_id}", its place in the store names run "${run.runId}" (a copied or renamed run keeps its old id inside)`,
      });
      tick(state);
      return;
    }
    const present = new Set([...run.history, ...run.batches].map((e) => e.key));
    const resolve = indexPathResolver(ctx.profile, run.runId);
    // Readers accept an entry whose file is now gzipped (or the reverse), and resolve paths as the spec writes them.
    const found = (path: string): boolean => {
      const key = resolve(path)?.key ?? path;
      const twin = key.endsWith(GZIP_SUFFIX) ? key.slice(0, -GZIP_SUFFIX.length) : `${key}${GZIP_SUFFIX}`;
      return present.has(key) || present.has(twin);
    };
    for (const e of index?.checkpoints ?? []) {
      if (!found(e.file_path)) {
        findings.push({
          key: indexEntry.key,
          level: 'problem',
          reasonCode: 'checkpoint_not_found',
          message: `index entry ${e.sequence} points at missing ${e.file_path}`,
        });
      }
    }
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    findings.push(finding(indexEntry.key, err));
  }
  tick(state);
}

/** Warnings when history holds a newer sequence than latest, or another document under latest's sequence. */
function checkLatestAgainstHistory(
  findings: Finding[],
  latestKey: string,
  latest: { readonly sequence: number; readonly integrity: { readonly checksum: string } },
  sequences: ReadonlyMap<number, string>,
): void {
  const newest = Math.max(...sequences.keys());
  if (newest > latest.sequence) {
    findings.push({
      key: latestKey,
      level: 'warning',
      reasonCode: 'checkpoint_latest_stale',
      message: `latest holds sequence ${latest.sequence} but history has ${newest} (a write was interrupted between history and latest; resume uses the newer entry)`,
    });
  }
  const same = sequences.get(latest.sequence);
  if (same !== undefined && same !== latest.integrity.checksum) {
    findings.push({
      key: latestKey,
      level: 'warning',
      reasonCode: 'checkpoint_latest_differs',
      message: `latest and its history entry (sequence ${latest.sequence}) hold different documents`,
    });
  }
}

/** Prints the findings (a table, or JSON) and the summary line. */
async function printFindings(state: VerifyState): Promise<number> {
  const { ctx, findings, checked } = state;
  const problems = findings.filter((f) => f.level === 'problem');
  // Schema errors and not one document decoded: most likely the wrong --profile, so name the one that fits.
  const hint =
    state.decoded === 0 && problems.some((f) => f.reasonCode === 'checkpoint_schema_invalid')
      ? (await profileHint(ctx.storage, ctx.profile)).trim()
      : '';
  if (ctx.json) {
    printJson(ctx.io, { profile: ctx.profile.name, checked, problems: problems.length, findings, ...(hint ? { hint } : {}) });
  } else {
    if (findings.length > 0) {
      ctx.io.stdout.write(
        table(
          ['LEVEL', 'REASON', 'FILE', 'DETAIL'],
          findings.map((f) => [
            f.level === 'problem' ? ctx.style.red('problem') : ctx.style.yellow('warning'),
            f.reasonCode,
            f.key,
            f.message,
          ]),
        ),
      );
    }
    const summary = `Checked ${checked} file${checked === 1 ? '' : 's'}: ${problems.length} problem${problems.length === 1 ? '' : 's'}, ${findings.length - problems.length} warning${findings.length - problems.length === 1 ? '' : 's'}.`;
    ctx.io.stdout.write(`${problems.length > 0 ? ctx.style.red(summary) : ctx.style.green(summary)}\n`);
    if (hint) ctx.io.stderr.write(`${hint}\n`);
  }
  return problems.length > 0 ? EXIT.failed : EXIT.ok;
}

/** The store's content chunks: every referenced one present and intact (problems), unreferenced and hidden ones (warnings). */
async function checkChunks(ctx: CommandContext): Promise<Finding[]> {
  const audit = await auditChunks(ctx.storage);
  const findings: Finding[] = [];
  for (const m of audit.missing)
    findings.push({
      key: chunkKey(m.id),
      level: 'problem',
      reasonCode: 'checkpoint_integrity_mismatch',
      message: `missing: referenced by ${m.document}`,
    });
  for (const d of audit.damaged)
    findings.push({
      key: chunkKey(d.id),
      level: 'problem',
      reasonCode: 'checkpoint_integrity_mismatch',
      message: `${d.reason} (referenced by ${d.document})`,
    });
  for (const id of audit.hiddenReferenced)
    findings.push({
      key: chunkKey(id),
      level: 'warning',
      reasonCode: 'checkpoint_chunk_hidden',
      message: 'hidden by a sweep but referenced again: read from its hidden copy; the next sweep puts it back',
    });
  // A missing or damaged node hides the chunks below it: they look unreferenced, and the sweep stops rather than free them.
  const unreferenced =
    audit.missing.length + audit.damaged.length > 0
      ? 'referenced by no readable document or node (a missing or damaged one above may reference it): the sweep frees nothing until every node reads'
      : 'referenced by no document: `savepoint prune` (or sweepChunks) frees it';
  for (const id of audit.unreferenced)
    findings.push({ key: chunkKey(id), level: 'warning', reasonCode: 'checkpoint_chunk_unreferenced', message: unreferenced });
  return findings;
}

/** `savepoint verify [RUN]` */
export const verifyCommand: Command = {
  name: 'verify',
  usage: '[RUN…]',
  summary:
    'Check every stored file (schema + checksum), or only those of the runs named; print each problem with its reason code; exit 1 if any',
  options: {},
  async run(ctx) {
    const runIds = [...new Set(ctx.positionals)];
    for (const runId of runIds) ctx.profile.assertRunId(runId);
    const files = await collectRunFiles(ctx.storage, ctx.profile, runIds.length === 1 ? runIds[0] : undefined);
    // A run the listing misses may still have a fixed file that is not a file (a symbolic link): report it, not "not found".
    const hidden: Finding[] = [];
    for (const runId of await unlistedRuns(ctx, new Set(files.runs.keys()), runIds)) hidden.push(...(await checkFixedFiles(ctx, runId)));
    const hiddenRuns = new Set(hidden.map((f) => ctx.profile.layout.classify(f.key)?.runId).filter((r): r is string => r !== undefined));
    await assertRunsExist(
      ctx.storage,
      ctx.profile,
      files,
      runIds.filter((r) => !hiddenRuns.has(r)),
      storeLabel(ctx.values, ctx.storage),
      hidden.length,
    );
    const runs = [...files.runs.values()].filter((r) => runIds.length === 0 || runIds.includes(r.runId));
    const storeWide = runIds.length === 0 ? files.storeWide : [];
    const total =
      runs.reduce((n, r) => n + r.history.length + r.batches.length + (r.latest ? 1 : 0) + (r.index ? 1 : 0), 0) + storeWide.length;
    const state: VerifyState = { ctx, findings: hidden, bar: progressBar(ctx.io, total, 'verifying'), checked: hidden.length, decoded: 0 };
    for (const run of runs) await verifyRun(state, run);
    for (const entry of storeWide) {
      state.findings.push(...(await checkJsonFile(ctx, entry)));
      tick(state);
    }
    state.bar.done();
    if (runIds.length === 0) state.findings.push(...(await checkChunks(ctx)));
    return printFindings(state);
  },
};
