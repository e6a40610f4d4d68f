/**
 * Writing checkpoints: run with `npx tsx examples/writing.ts`.
 *
 * An agent loop saves its state at each step boundary through a CheckpointWriter on an
 * in-memory store, shows coalescing (a second trigger with no material change inside 3 s),
 * the heartbeat (driven here by a hand-moved clock: on the default profile it stores nothing
 * while the state is unchanged), a storage failure that does not stop
 * the agent, and a second writer continuing the numbering of the same run.
 */
import { createWriter, defaultProfile, listAll, memoryStorage, type JsonValue, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { manualClock } from 'savepoint/testing';

// A clock we move by hand, so the example shows a 120-second heartbeat without waiting.
const clock = manualClock('2025-06-01T12:00:00Z');
const store = memoryStorage();
let failNextWrites = 0;
// A store that can be told to fail, to show fail-forward.
const storage: StorageAdapter = {
  ...store,
  batch: async (ops) => {
    if (failNextWrites > 0) {
      failNextWrites--;
      throw new Error('disk on fire');
    }
    return store.batch!(ops);
  },
};

const writer = createWriter<JsonValue>({ storage, profile: defaultProfile, runId: 'demo-run', clock, retryBaseMs: 0 });
writer.on('written', (e) => console.log(`  [written]   #${e.sequence} ${e.source} (${e.status}) → ${e.key} (${e.bytes} bytes, ${e.mode})`));
writer.on('coalesced', (e) => console.log(`  [coalesced] ${e.source} recorded in #${e.sequence} (source_details: ${e.recorded})`));
writer.on('retry', (e) => console.log(`  [retry]     attempt ${e.attempt} failed (${e.reasonCode}), next in ${e.delayMs} ms`));
writer.on('error', (e) => console.log(`  [error]     ${e.reasonCode} during ${e.during}`));
writer.on('heartbeat', () => console.log('  [heartbeat] the state has not changed since the last snapshot: nothing stored'));

console.log('1. step boundaries');
for (let step = 1; step <= 2; step++) {
  const r = await writer.checkpoint({
    source: 'step_boundary',
    status: 'in_progress',
    payload: { step, todo: ['a', 'b'].slice(step - 1) },
  });
  console.log(`  → ${r.ok ? `${r.outcome} as #${r.sequence}` : r.reasonCode}`);
  await clock.advance(5_000);
}

console.log('2. an error boundary 1 s after a step boundary, same state → coalesced (one snapshot, two triggers)');
await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 3, todo: [] } });
await clock.advance(1_000);
const c = await writer.checkpoint({ source: 'error_boundary', status: 'in_progress', payload: { step: 3, todo: [] } });
console.log(
  `  → ${c.ok ? `${c.outcome} into #${c.sequence}, source_details = ${JSON.stringify(c.snapshot.sourceDetails)}` : c.reasonCode}`,
);

console.log(
  '3. two minutes without a checkpoint while in_progress → heartbeat (snapshotLifecycle would store the state again; the default profile does not)',
);
await clock.advance(120_000);
await writer.flush();

console.log('4. an unknown trigger is refused, not written');
const bad = await writer.checkpoint({ source: 'whenever', status: 'in_progress', payload: {} });
console.log(`  → ${bad.ok ? 'written?!' : bad.reasonCode}`);

console.log('5. storage fails three times: the agent gets ok:false and carries on');
failNextWrites = 3;
const failed = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 4 } });
console.log(`  → ok=${failed.ok}${failed.ok ? '' : `, reasonCode=${failed.reasonCode}`}`);
const retried = await writer.checkpoint({ source: 'step_boundary', status: 'completed', payload: { step: 4, done: true } });
console.log(`  → next checkpoint: ${retried.ok ? `${retried.outcome} as #${retried.sequence}` : retried.reasonCode}`);
await writer.close();

console.log('6. a new writer on the same run (a restarted process) continues the numbering');
const again = createWriter<JsonValue>({ storage: store, profile: defaultProfile, runId: 'demo-run', clock });
const opened = await again.open();
console.log(`  → recovered lastSequence = ${opened.ok ? opened.lastSequence : opened.reasonCode}`);
await again.close();

console.log('stored files:');
for (const e of await listAll(store, '')) console.log(`  ${e.key} (${e.size} bytes)`);
const latest = await readSnapshot(store, defaultProfile, defaultProfile.layout.latestKey('demo-run'));
console.log(`latest: #${latest?.sequence} ${latest?.source} ${latest?.status} ${JSON.stringify(latest?.payload)}`);
