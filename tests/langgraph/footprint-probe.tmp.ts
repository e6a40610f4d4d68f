import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { listAll, memoryStorage } from '../../src/index.js';
import { SavepointSaver } from '../../src/langgraph/index.js';
import { fsStorage } from '../../src/entries/fs.js';

function prose(seed: number, size: number): string {
  let x = seed | 1;
  let t = '';
  const W = ['the', 'agent', 'called', 'tool', 'result', 'and', 'then', 'wrote', 'a', 'long', 'answer'];
  while (t.length < size) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    t += W[(x >>> 0) % W.length] + ' ' + ((x >>> 8) % 1000) + ' ';
  }
  return t;
}
const turns = Number(process.argv[2] ?? 200);
const storage = process.argv[3] === 'fs' ? fsStorage({ dir: '/tmp/dd/' + Date.now() }) : memoryStorage();
const saver = new SavepointSaver({ storage, keepLast: false, dedup: process.env.DEDUP !== '0' });
let config: any = { configurable: { thread_id: 't', checkpoint_ns: '' } };
const messages: any[] = [];
let n = 0;
const t0 = performance.now();
for (let turn = 0; turn < turns; turn++) {
  for (let k = 0; k < 3; k++) {
    if (k === 1)
      messages.push({
        lc: 1,
        type: 'constructor',
        id: ['langchain_core', 'messages', 'AIMessage'],
        kwargs: { content: prose(turn + 1, 2000), id: `m${turn}` },
      });
    n++;
    const cp = { ...emptyCheckpoint(), id: uuid6(n), channel_values: { messages: [...messages] }, channel_versions: { messages: n + 1 } };
    config = await saver.put(config, cp, { source: 'loop', step: n, parents: {} }, { messages: n + 1 });
  }
}
const ms = performance.now() - t0;
const all = await listAll(storage, '');
const total = all.reduce((s, e) => s + e.size, 0);
const chunks = all.filter((e) => e.key.startsWith('chunks/'));
console.log(
  JSON.stringify({
    turns,
    checkpoints: n,
    keys: all.length,
    totalMB: total / 1e6,
    chunkMB: chunks.reduce((s, e) => s + e.size, 0) / 1e6,
    chunkCount: chunks.length,
    msPerTurn: ms / turns,
  }),
);
