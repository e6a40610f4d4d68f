/**
 * Replacing one of the packed store's small files (the manifest, the hint) whole: written to a
 * temp file beside it, then renamed over it, so a reader finds the old file or the new one, never
 * a mix. A crash can leave the temp file: its name starts with the file's temp prefix, and the
 * next lock holder removes it (open.ts).
 */
import { constants } from 'node:fs';
import { join } from 'node:path';
import { syncDirectory, type PackedIo } from './io.js';

let tempCounter = 0;

/** A name for a new temp file of this process: `prefix` then a number unique in it. */
export const tempNameOf = (prefix: string): string => `${prefix}${process.pid}-${tempCounter++}`;

/** How a file is replaced. */
export interface Replacement {
  /** The file replaced, and the temp file written first (names in the store's directory). */
  readonly name: string;
  readonly temp: string;
  /** Durably: the temp file fsynced before the rename, the directory after it. */
  readonly durable: boolean;
  /** Runs just before the rename and throws when the rename must not happen (the temp file is then removed). */
  readonly fence?: (() => void) | undefined;
}

/** Replaces `dir`'s file `r.name` by `data` through the temp file `r.temp`; a failure before the fence leaves the temp file. */
export async function replaceViaTemp(io: PackedIo, dir: string, data: Buffer, r: Replacement): Promise<void> {
  const temp = join(dir, r.temp);
  const fd = await io.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o644);
  try {
    await io.writeAt(fd, data, 0);
    if (r.durable) await io.fsync(fd);
  } finally {
    await io.close(fd);
  }
  try {
    r.fence?.();
  } catch (err) {
    await io.unlink(temp).catch(() => undefined);
    throw err;
  }
  await io.rename(temp, join(dir, r.name));
  if (r.durable) await syncDirectory(io, dir);
}
