/**
 * Storage bench: fsStorage's durable put against raw node:fs doing the same durable steps
 * (temp file, write, fsync, rename, fsync dir), interleaved in one process, as a ratio of
 * medians (savepoint throughput / baseline throughput).
 */
import fs, { mkdtempSync, rmSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsStorage } from 'savepoint/fs';
import { fmt, interleave, median, type BenchRow } from './harness.js';

const KEY_DIR = 'checkpoints/run-1';
const OPS_PER_SAMPLE = 2;
const ROUNDS = 300;

// The baseline uses the same node:fs calls fsStorage uses (file descriptors, callback API),
// so the ratio measures what fsStorage adds, not a difference between fs APIs.
const call = <T>(start: (cb: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value))));
const open = (path: string, flags: number): Promise<number> => call<number>((cb) => fs.open(path, flags, 0o666, cb));
const write = (fd: number, bytes: Uint8Array): Promise<number> => call<number>((cb) => fs.write(fd, bytes, 0, bytes.length, 0, cb));
const fsync = (fd: number): Promise<void> => call<void>((cb) => fs.fsync(fd, (err) => cb(err, undefined)));
const close = (fd: number): Promise<void> => call<void>((cb) => fs.close(fd, (err) => cb(err ?? null, undefined)));
const { O_WRONLY, O_CREAT, O_EXCL, O_RDONLY, O_DIRECTORY } = fs.constants;

/** The same durable replace, written plainly: what a careful hand-rolled writer does. */
async function rawDurablePut(dir: string, name: string, bytes: Uint8Array, n: number): Promise<void> {
  const tmp = `${dir}/.${name}.${process.pid}.${n}.tmp`;
  const fd = await open(tmp, O_WRONLY | O_CREAT | O_EXCL);
  try {
    await write(fd, bytes);
    await fsync(fd);
  } finally {
    await close(fd);
  }
  await fsp.rename(tmp, `${dir}/${name}`);
  const d = await open(dir, O_RDONLY | O_DIRECTORY);
  try {
    await fsync(d);
  } finally {
    await close(d);
  }
}

/** The same create-only write by link(2), plainly. */
async function rawDurableCreate(dir: string, name: string, bytes: Uint8Array, n: number): Promise<void> {
  const tmp = `${dir}/.${name}.${process.pid}.${n}.tmp`;
  const fd = await open(tmp, O_WRONLY | O_CREAT | O_EXCL);
  try {
    await write(fd, bytes);
    await fsync(fd);
  } finally {
    await close(fd);
  }
  await fsp.link(tmp, `${dir}/${name}`);
  await fsp.unlink(tmp);
  const d = await open(dir, O_RDONLY | O_DIRECTORY);
  try {
    await fsync(d);
  } finally {
    await close(d);
  }
}

function row(name: string, ours: number[], theirs: number[], target: number | undefined): BenchRow {
  // Samples are ms per OPS_PER_SAMPLE operations; throughput = ops / s.
  const opsPerSec = (ms: number): number => (OPS_PER_SAMPLE * 1000) / ms;
  const a = opsPerSec(median(ours));
  const b = opsPerSec(median(theirs));
  const ratio = a / b;
  return {
    area: 'storage',
    name,
    savepoint: `${fmt(a)} ops/s`,
    baseline: `${fmt(b)} ops/s`,
    ratio: `${ratio.toFixed(2)}× of baseline`,
    target: target === undefined ? '—' : `≥ ${target.toFixed(2)}×`,
    met: target === undefined ? true : ratio >= target,
  };
}

export async function bench(): Promise<BenchRow[]> {
  const base = mkdtempSync(join(tmpdir(), 'savepoint-bench-storage-'));
  try {
    const storeDir = join(base, 'store');
    const rawDir = join(base, 'raw', KEY_DIR);
    await fsp.mkdir(rawDir, { recursive: true });
    const storage = fsStorage({ dir: storeDir });
    await storage.ready();
    const value = new Uint8Array(4096).map((_, i) => (i * 31) & 0xff);
    let n = 0;

    // Warm up both paths (directory creation, JIT) before measuring.
    for (let i = 0; i < 20; i++) {
      await storage.put(`${KEY_DIR}/latest.json`, value);
      await rawDurablePut(rawDir, 'latest.json', value, n++);
    }
    const put = await interleave(
      ROUNDS,
      async () => {
        for (let i = 0; i < OPS_PER_SAMPLE; i++) await storage.put(`${KEY_DIR}/latest.json`, value);
      },
      async () => {
        for (let i = 0; i < OPS_PER_SAMPLE; i++) await rawDurablePut(rawDir, 'latest.json', value, n++);
      },
    );

    let h = 0;
    const create = await interleave(
      Math.ceil(ROUNDS / 2),
      async () => {
        for (let i = 0; i < OPS_PER_SAMPLE; i++) await storage.put(`${KEY_DIR}/history/cp_${h++}.json`, value, { ifAbsent: true });
      },
      async () => {
        await fsp.mkdir(`${rawDir}/history`, { recursive: true });
        for (let i = 0; i < OPS_PER_SAMPLE; i++) await rawDurableCreate(`${rawDir}/history`, `cp_${h++}.json`, value, n++);
      },
    );
    await storage.close();
    return [
      row('fsStorage durable put 4 KB', put.a, put.b, 0.95),
      row('fsStorage create-only put 4 KB (link)', create.a, create.b, undefined),
    ];
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
