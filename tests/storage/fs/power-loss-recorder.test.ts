/**
 * The power-loss recorder itself: a file created while recording over an existing tree is a
 * new inode, so replaying the calls never writes into a file the tree already held.
 */
import { closeSync, constants, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyOp, cloneTree, writeTree, type Tree } from '../../support/power-loss/model.js';
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
});
