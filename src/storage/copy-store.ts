/**
 * A copy of every key of one store into another, byte for byte: how a packed fs directory is
 * exported to the file layout (a file per key, to read with other tools) and brought back, or a
 * store moved to another backend. Generic: `list`, multi-get (or gets) and batches (or puts) of
 * the contract, nothing of either store's layout.
 *
 * Not a snapshot: writers of the source must be stopped while it runs. Versions are not copied
 * (the target gives its own). A copy that fails part way leaves the target partial: the target
 * must hold no key under the prefix when a copy starts, so a failed copy is retried into a new
 * (or emptied) target, never merged into one.
 */
import { CheckpointError } from '../contract/errors.js';
import { listKeysOf, readMany, type BatchOperation, type StorageAdapter } from '../contract/storage.js';
import { assertPrefix } from './keys.js';

/** What a copy did. */
export interface CopyReport {
  /** Keys copied. */
  readonly keys: number;
  /** Bytes of the values copied. */
  readonly bytes: number;
}

/** Keys read and written together (one multi-get and one batch where the stores have them), and about how many bytes at most. */
const KEYS_A_STEP = 64;
const BYTES_A_STEP = 8 * 1024 * 1024;

async function refuseFilledTarget(to: StorageAdapter, prefix: string): Promise<void> {
  for await (const key of listKeysOf(to, prefix))
    throw new CheckpointError(
      'checkpoint_conflict',
      `copyStore: the target already holds keys under "${prefix}" (${key}): copy into an empty store`,
      {
        details: { key },
      },
    );
}

/** Writes `puts` into `to`: one batch where it has an atomic one, else one put after another. Each is create-only. */
async function writeStep(to: StorageAdapter, puts: readonly BatchOperation[]): Promise<void> {
  if (to.capabilities.atomicBatch && to.batch) {
    await to.batch(puts);
    return;
  }
  for (const op of puts) if (op.type === 'put') await to.put(op.key, op.bytes, { ifAbsent: true });
}

/** Copies the values of `from` under `prefix` (default: all) into `to`, which must hold none there. */
export async function copyStore(from: StorageAdapter, to: StorageAdapter, options: { readonly prefix?: string } = {}): Promise<CopyReport> {
  const prefix = options.prefix ?? '';
  assertPrefix(prefix);
  await refuseFilledTarget(to, prefix);
  let keys = 0;
  let bytes = 0;
  const copyStep = async (step: readonly string[]): Promise<void> => {
    const values = await readMany(from, step);
    const puts: BatchOperation[] = [];
    // A key deleted between the listing and its read is left out, as if listed after.
    values.forEach((value, i) => value && puts.push({ type: 'put', key: step[i]!, bytes: value.bytes, ifAbsent: true }));
    if (puts.length > 0) await writeStep(to, puts);
    keys += puts.length;
    for (const op of puts) if (op.type === 'put') bytes += op.bytes.length;
  };
  let step: string[] = [];
  let stepBytes = 0;
  for await (const entry of from.list(prefix)) {
    step.push(entry.key);
    stepBytes += entry.size;
    if (step.length < KEYS_A_STEP && stepBytes < BYTES_A_STEP) continue;
    await copyStep(step);
    step = [];
    stepBytes = 0;
  }
  if (step.length > 0) await copyStep(step);
  return { keys, bytes };
}
