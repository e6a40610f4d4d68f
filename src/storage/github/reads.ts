import type { StoredObject } from '../../contract/storage.js';
import { assertKey } from '../keys.js';
import { compareWithBranch, judgeOwnWrite } from './branch-comparison.js';
import { readBlob, readFile } from './contents.js';
import { loadQueue } from './queue-push.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';

/**
 * `get()`: the queue first (a queued write is what the key holds), then the branch. When the
 * branch shows another blob than this adapter's own fresh write of the path, the compare API
 * tells a lagging replica (answer ours) from another writer's newer commit (answer theirs, and
 * forget ours).
 */
export async function getKey(store: GitHubStoreState, key: string): Promise<StoredObject | undefined> {
  const { ctx } = store;
  assertOpen(store);
  assertKey(key);
  await loadQueue(store);
  const queued = store.queue.overlay().get(key);
  if (queued !== undefined) return queued === null ? undefined : { bytes: queued.bytes.slice(), version: queued.version };
  const path = ctx.toPath(key);
  const found = await readFile(ctx, path, store.branch);
  const own = ctx.state.ownWrites(store.clock.now() - store.readYourWritesMs).get(path);
  if (!own || (found?.sha ?? null) === own.sha) return found ? { bytes: found.bytes, version: found.sha } : undefined;
  const verdict = judgeOwnWrite(await compareWithBranch(ctx, own.commit), path, found?.sha ?? null);
  if (verdict.kind === 'ours') {
    if (own.sha === null) return undefined;
    const mine = await readFile(ctx, path, own.commit);
    if (mine) return { bytes: mine.bytes, version: mine.sha };
    return found ? { bytes: found.bytes, version: found.sha } : undefined;
  }
  ctx.state.forgetOwnWrites([path]);
  if (verdict.kind === 'branch') return found ? { bytes: found.bytes, version: found.sha } : undefined;
  if (verdict.sha === null) return undefined;
  const bytes = await readBlob(ctx, verdict.sha);
  return bytes ? { bytes, version: verdict.sha } : undefined;
}
