import { jsoncToJson, withoutBom } from './jsonc.js';
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import { assertObjectArgument, assertStringArgument } from '../../contract/arguments.js';

/**
 * Writes `data` so a crash never leaves a half-written file: a temp file in the same
 * folder, fsync, rename over the target, fsync of the folder (where the platform allows).
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  assertStringArgument(path, 'writeFileAtomic', 'path');
  assertStringArgument(data, 'writeFileAtomic', 'data');
  const tmp = join(dirname(path), `.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(tmp, 'w', 0o644);
    try {
      await handle.writeFile(data, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    const name = path.split(/[\\/]/).pop() ?? 'file';
    const code = (err as NodeJS.ErrnoException).code;
    throw new CheckpointError('checkpoint_atomic_write_failed', `could not write ${name}`, {
      cause: err,
      details: { cause: `could not write ${name}${typeof code === 'string' ? `: ${code}` : ''}` },
    });
  }
  try {
    const dir = await open(dirname(path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch {
    // Directories cannot be opened for fsync on Windows; the rename is still atomic.
  }
}

/** The file's text, or `undefined` when it does not exist. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** `.ccc-state.json` as the protocol reads it; every other field is preserved on write. */
export interface CccState {
  /** Id of the "Checkpoint Status" comment (Step 3). */
  readonly checkpointCommentId?: string | number;
  /** Files of the active task: the only ones Step 2 may stage. */
  readonly activeTaskFiles?: readonly string[];
  readonly [field: string]: unknown;
}

/**
 * Reads `.ccc-state.json`: `{}` when absent; `checkpoint_schema_invalid` when it is not a JSON
 * object. Read liberally: a UTF-8 byte order mark, comments and trailing commas (JSONC) are
 * accepted.
 */
export async function readStateFile(path: string): Promise<CccState> {
  assertStringArgument(path, 'readStateFile', 'path');
  const text = await readTextIfExists(path);
  if (text === undefined) return {};
  let value: unknown;
  try {
    const plain = withoutBom(text);
    try {
      value = JSON.parse(plain);
    } catch {
      value = JSON.parse(jsoncToJson(plain));
    }
  } catch (err) {
    throw new CheckpointError('checkpoint_schema_invalid', '.ccc-state.json is not valid JSON', { cause: err });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new CheckpointError('checkpoint_schema_invalid', '.ccc-state.json is not a JSON object');
  return value as CccState;
}

function indentOf(text: string): string | number {
  const m = /^\{\r?\n([ \t]+)"/.exec(withoutBom(text));
  if (!m) return 2;
  return m[1]!.startsWith('\t') ? '\t' : m[1]!.length;
}

/**
 * Sets `fields` in `.ccc-state.json`, keeping every other field, their order and the
 * file's indentation (and a byte order mark; comments are not kept: savepoint writes JSON). The file is re-read right before writing, so fields another
 * process wrote since the protocol started are kept too. Creates the file when absent.
 */
export async function updateStateFile(path: string, fields: Readonly<Record<string, unknown>>): Promise<void> {
  assertStringArgument(path, 'updateStateFile', 'path');
  assertObjectArgument(fields, 'updateStateFile', 'fields');
  const text = await readTextIfExists(path);
  const state = text === undefined ? {} : await readStateFile(path);
  const next = { ...state, ...fields };
  const bom = text !== undefined && text !== withoutBom(text) ? '\uFEFF' : '';
  await writeFileAtomic(path, `${bom}${JSON.stringify(next, null, text === undefined ? 2 : indentOf(text))}\n`);
}
