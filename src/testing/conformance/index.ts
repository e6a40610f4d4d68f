/**
 * The storage conformance suite: every behaviour savepoint relies on from a
 * {@link StorageAdapter}, as tests registered with your own test runner.
 *
 * @packageDocumentation
 */
import { CheckpointError } from '../../contract/errors.js';
import { basicTests } from './basic.js';
import { batchTests } from './batch.js';
import { concurrencyTests } from './concurrency.js';
import { conditionalTests } from './conditional.js';
import { createContext } from './context.js';
import { keyTests } from './keys.js';
import { keyListingTests } from './key-listing.js';
import { lifecycleTests } from './lifecycle.js';
import { linkedReadTests } from './linked-read.js';
import { moveTests } from './move.js';
import { multiGetTests } from './multi-get.js';
import { listingTests } from './listing.js';
import { modelTests } from './model.js';
import { versionsPerWriteTests } from './versions-per-write.js';
import type { StorageConformanceOptions } from './options.js';

export type { StorageConformanceOptions, StorageConformanceFastCheck } from './options.js';
export { ConformanceFailure } from './check.js';
export { INVALID_KEY_SAMPLES, EDGE_KEYS, type InvalidKeySample } from './keys.js';

/**
 * Registers the storage conformance suite with your test runner. Every adapter savepoint
 * ships (memory, fs, github) passes it; run it on yours before you trust it with
 * checkpoints. The suite uses only the `describe`/`it` you pass (no test framework is
 * imported) and its own assertions; the model-based property needs `fast-check`
 * (pass it as `fc`, or have it installed).
 *
 * Covered: get/put/delete and versions (new on every write, never reused for a key),
 * private copies of bytes, binary values (all 256 byte values, empty, large), declared
 * size limits, create-only and replace/delete-if-version incl. stale versions, list
 * order (UTF-16 code units) and prefix boundaries, refusal of every invalid key class,
 * atomic batches when declared, linked reads (the store's own when declared), multi-gets when declared, listings by name (`listKeys`) where present, a new version on every kind of write when `versionsPerWrite` is declared, close() semantics, persistence across reopen when
 * `reopen` is given, N racing conditional writers (exactly one wins), and random
 * operation sequences checked against a reference model.
 *
 * @example
 * ```ts
 * // my-adapter.conformance.test.ts (vitest)
 * import fc from 'fast-check';
 * import { describe, it } from 'vitest';
 * import { runStorageConformance } from 'savepoint/testing';
 * import { myStorage } from '../src/my-storage.js';
 *
 * runStorageConformance({
 *   name: 'myStorage',
 *   describe,
 *   it,
 *   fc,
 *   create: () => myStorage({ table: `t_${Math.random().toString(36).slice(2)}` }),
 *   capabilities: { atomicBatch: false, crossProcessConditional: true },
 * });
 * ```
 */
export function runStorageConformance(options: StorageConformanceOptions): void {
  if (!options || typeof options.it !== 'function' || typeof options.create !== 'function') {
    throw new CheckpointError('checkpoint_config_invalid', 'runStorageConformance needs at least { it, create }');
  }
  const ctx = createContext(options);
  const body = (): void => {
    basicTests(ctx);
    conditionalTests(ctx);
    listingTests(ctx);
    keyListingTests(ctx);
    keyTests(ctx);
    batchTests(ctx);
    lifecycleTests(ctx);
    concurrencyTests(ctx);
    modelTests(ctx);
    linkedReadTests(ctx);
    moveTests(ctx);
    multiGetTests(ctx);
    versionsPerWriteTests(ctx);
  };
  ctx.group(`${options.name ?? 'storage adapter'} conformance`, body);
}
