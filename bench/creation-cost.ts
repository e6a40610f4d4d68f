/**
 * What creating an empty file costs in a directory: the kernel's share of each file savepoint's
 * fs store writes there (SQLite creates none). On an ext4 without a journal it grows with the
 * inodes deleted in the last minutes near the directory's (docs/storage.md, "What a file
 * creation costs decides the fs rows"), so the fs rows report it beside their figures.
 */
import { closeSync, constants, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { median } from './harness.js';

/**
 * Median of batches, µs per file. The files stay (a delete would make the next creations near
 * them dearer on some file systems) until the bench's directory is removed.
 */
export function creationCostUs(dir: string, name: string): number {
  const at = join(dir, `creation-cost-${name}`);
  mkdirSync(at);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
  const perBatch: number[] = [];
  for (let batch = 0, n = 0; batch < 10; batch++) {
    const start = performance.now();
    for (let i = 0; i < 20; i++) closeSync(openSync(join(at, `f${n++}`), flags));
    perBatch.push(((performance.now() - start) / 20) * 1000);
  }
  return median(perBatch);
}
