/**
 * The power-loss recorder itself: a file created while recording over an existing tree is a
 * new inode, so replaying the calls never writes into a file the tree already held. And the
 * digest that checks each crash state once: equal exactly when the files' bytes are.
 */
import { closeSync, constants, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { applyOp, cloneTree, digestTree, writeTree, type Tree } from '../../support/power-loss/model.js';
import { record } from '../../support/power-loss/recorder.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const openAsync = (path: string, flags: number): Promise<number> =>
  new Promise((resolve, reject) => fs.open(path, flags, 0o666, (err, fd) => (err ? reject(err) : resolve(fd))));
const writeAsync = (fd: number, bytes: Uint8Array): Promise<void> =>
  new Promise((resolve, reject) => fs.write(fd, bytes, 0, bytes.length, 0, (err) => (err ? reject(err) : resolve())));

describe('power-loss recorder', () => {
  it('gives a file created over an existing tree an inode of its own', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'savepoint-recorder-')));
    dirs.push(root);
    const old = new TextEncoder().encode('old file, written before the recording');
    const base: Tree = { dirs: new Map([['', new Map([['old', { kind: 'file', ino: 1 }]])]]), inodes: new Map([[1, old]]) };
    writeTree(base, root);
    const rec = record(root, base);
    try {
      const fd = await openAsync(join(root, 'new'), constants.O_CREAT | constants.O_WRONLY);
      await writeAsync(fd, new TextEncoder().encode('new'));
      closeSync(fd);
    } finally {
      rec.stop();
    }
    const created = rec.ops.find((o) => o.t === 'create');
    expect(created && created.t === 'create' && created.ino).not.toBe(1);
    const tree = cloneTree(base);
    for (const op of rec.ops) applyOp(tree, op);
    expect(new TextDecoder().decode(tree.inodes.get(1))).toBe('old file, written before the recording');
  });

  it('gives two trees the same digest exactly when their files hold the same bytes (trailing zeros and length count)', () => {
    const oneFile = (bytes: Uint8Array): Tree => ({
      dirs: new Map([['', new Map([['f', { kind: 'file', ino: 1 }]])]]),
      inodes: new Map([[1, bytes]]),
    });
    // Mostly zeros, as a preallocated journal file is, with a few bytes set; long enough to span several compared blocks.
    const sparse = fc
      .tuple(fc.integer({ min: 0, max: 200_000 }), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }))
      .map(([length, sets]) => {
        const bytes = new Uint8Array(length);
        for (const [at, value] of sets) if (length > 0) bytes[at % length] = value;
        return bytes;
      });
    // b: a's bytes in another array, or a with one byte changed, a zero more or one byte less.
    const edit = fc.oneof(
      fc.constant({ kind: 'same' as const, at: 0 }),
      fc.record({ kind: fc.constantFrom('flip' as const, 'zero-more' as const, 'byte-less' as const), at: fc.nat() }),
    );
    const edited = (a: Uint8Array, { kind, at }: { kind: 'same' | 'flip' | 'zero-more' | 'byte-less'; at: number }): Uint8Array => {
      if (kind === 'byte-less') return a.slice(0, Math.max(0, a.length - 1));
      const b = new Uint8Array(a.length + (kind === 'zero-more' ? 1 : 0));
      b.set(a);
      if (kind === 'flip' && a.length > 0) b[at % a.length] = b[at % a.length]! ^ 1;
      return b;
    };
    fc.assert(
      fc.property(sparse, edit, sparse, (a, how, other) => {
        const b = edited(a, how);
        expect(digestTree(oneFile(a)) === digestTree(oneFile(b))).toBe(Buffer.compare(a, b) === 0);
        expect(digestTree(oneFile(a)) === digestTree(oneFile(other))).toBe(Buffer.compare(a, other) === 0);
      }),
      { numRuns: 200 },
    );
  });
});
