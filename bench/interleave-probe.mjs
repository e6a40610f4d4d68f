/* global process, performance, setTimeout, console */
// Scratch (untracked): old and new dist in one process, alternate rounds of 8 runs × 25 checkpoints.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const load = async (d) => ({ core: await import(`${d}/dist/index.js`), fs: await import(`${d}/dist/fs.js`) });
const sides = { old: await load('/tmp/fsworker-old'), new: await load('/work/wt/fsworker') };
const lease = process.env.LEASE === '1';
const base = mkdtempSync(join(process.env.DIR ?? tmpdir(), 'sp-interleave-'));
const stores = Object.fromEntries(Object.entries(sides).map(([k, s]) => [k, s.fs.fsStorage({ dir: join(base, k), journal: true })]));
const payload1k = (i) => ({ step: i, note: 'x'.repeat(1000) });
async function round(k, r) {
  const { createWriter, defaultProfile } = sides[k].core;
  const storage = stores[k];
  const writers = Array.from({ length: 8 }, (_, j) => createWriter({ storage, profile: defaultProfile, runId: `run-${r}-${j}`, ...(lease ? {} : { lock: false }) }));
  const c0 = process.cpuUsage();
  const t = performance.now();
  await Promise.all(writers.map(async (w) => { for (let i = 0; i < 25; i++) { const res = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payload1k(i) }); if (!res.ok) throw res.error; } }));
  const dt = performance.now() - t;
  await Promise.all(writers.map((w) => w.close()));
  await storage.flush();
  const c = process.cpuUsage(c0);
  return { dt, cpu: (c.user + c.system) / 1000 };
}
const res = { old: { dt: [], cpu: [] }, new: { dt: [], cpu: [] } };
await round('old', -1); await round('new', -1);
const R = Number(process.env.R ?? 12);
for (let r = 0; r < R; r++) {
  for (const k of r % 2 ? ['old', 'new'] : ['new', 'old']) {
    await new Promise((res) => setTimeout(res, 60));
    const m = await round(k, r);
    res[k].dt.push(m.dt); res[k].cpu.push(m.cpu);
  }
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const o = { ops: 200000 / med(res.old.dt), cpu: med(res.old.cpu) / 200 }, n = { ops: 200000 / med(res.new.dt), cpu: med(res.new.cpu) / 200 };
console.log(`old ${o.ops.toFixed(0)}/s cpu ${o.cpu.toFixed(3)} ms/cp | new ${n.ops.toFixed(0)}/s cpu ${n.cpu.toFixed(3)} ms/cp | new/old thr ${(n.ops / o.ops).toFixed(2)} cpu ${(n.cpu / o.cpu).toFixed(2)}`);
await Promise.all(Object.values(stores).map((s) => s.close()));
